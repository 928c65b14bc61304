/* cli.h — what the quicksilver commands share: the global options, the
 * engine (opened on first need), and how messages and results are printed.
 * Results go to stdout (JSON with --json), messages to stderr; a command
 * returns its exit status: 0 success, 1 failure, 2 usage error. */
#ifndef QS_CLI_H
#define QS_CLI_H

#include <cJSON.h>
#include <stddef.h>
#include <stdio.h>

#include "args.h"
#include "quicksilver.h"
#include "quicksilver_esrrf.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2, CLI_DONE = -1 };

typedef struct cli {
  const char *db; /* --db PATH */
  int threads;    /* --threads N (0: default) */
  int no_opencl;  /* --no-opencl */
  int quiet;      /* -q: no report on stderr */
  int verbose;    /* -v: more detail on stderr */
  int json;       /* --json: results as JSON on stdout */
  int tty;        /* stderr is a terminal */
  qs_engine *e;   /* opened by cli_engine, closed by main */
  int store_warned; /* "timings not recorded" was said (once a process) */
} cli;

/* Options every command accepts (after the command too). */
extern const opt_def cli_globals[];

/* Parses a command's arguments (argv[0] is the command) against its option
 * table, the globals, and a parameter table (may be NULL); applies the
 * globals to c. Prints the error and returns CLI_USAGE on a bad argument;
 * with --help prints the command's usage (synopsis, options, parameters)
 * and returns CLI_DONE, which the command turns into exit status 0. */
int cli_args(cli *c, int argc, char **argv, const char *synopsis,
             const opt_def *opts, const qs_param_def *defs, size_t n_defs,
             args *a);

/* Applies the globals found in a to c; CLI_DONE when --help is among
 * them, CLI_USAGE (printed) for a bad value. */
int cli_apply(cli *c, const args *a);

/* Returns from the calling command when cli_args did not return CLI_OK. */
#define CLI_ARGS_OR_RETURN(call)                                              \
  do {                                                                        \
    int rc_ = (call);                                                         \
    if (rc_) return rc_ == CLI_DONE ? CLI_OK : rc_;                           \
  } while (0)

/* Picks the engine-shaping globals (--db, --threads, --no-opencl, -q, -v)
 * out of argv[1..argc) before the engine is needed to know the rest of the
 * flags (a method's parameters); cli_args checks them properly later. */
void cli_prescan(cli *c, int argc, char **argv);

/* The engine, opened with the global options on first use. On failure the
 * reason is printed and CLI_FAIL returned. */
int cli_engine(cli *c, qs_engine **e);

/* cli_prescan, then cli_engine for a command whose flags come from a
 * method's tables: with --help/-h among argv the engine needs no store and
 * no devices, so it opens in memory without OpenCL. */
int cli_method_engine(cli *c, int argc, char **argv, qs_engine **e);

/* Warns once per process (unless -q) when the engine's timings are not
 * being recorded (qs_engine_record_status); the command still succeeds. */
void cli_record_warn(cli *c);

/* "quicksilver: <message>" on stderr; return CLI_FAIL / CLI_USAGE. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Exit status for a library status: usage errors (bad parameter, unknown
 * method or implementation) give CLI_USAGE, the rest CLI_FAIL. */
int cli_status_exit(int status);

/* A report line on stderr unless -q. */
void cli_note(const cli *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A report's estimates as a JSON array of {impl, seconds (null when
 * unknown), source, runs, optimistic (the optimistic bound; null: not a
 * candidate), state (the selection rule's verdict)}. */
cJSON *cli_estimates_json(const qs_run_report *r);

/* Prints j on stdout and frees it; CLI_FAIL if it could not be printed. */
int cli_json_out(cJSON *j);

/* Prints the usage of one command (its options and, when given, the
 * parameter flags) to f. */
void cli_params_help(FILE *f, const qs_param_def *defs, size_t n_defs);
void cli_help(FILE *f, const char *synopsis, const opt_def *opts,
              const qs_param_def *defs, size_t n_defs);

/* Ctrl-C as a request to stop: from cli_interrupt_catch (which returns
 * the previous SIGINT disposition) the first SIGINT sets
 * cli_interrupted() and a second one ends the process as usual, until
 * cli_interrupt_release(previous). */
void (*cli_interrupt_catch(void))(int);
void cli_interrupt_release(void (*old)(int));
int cli_interrupted(void);

/* A call's progress on stderr and Ctrl-C as its cancellation
 * (run_request.progress): between cli_progress_begin and cli_progress_end
 * the first SIGINT cancels the running call (it returns QS_ECANCELLED
 * within a piece of work; a second SIGINT kills the process as usual),
 * and on a terminal, unless -q or --json, a line "WHAT: 42% (420/1000)
 * 3.1 s" is kept up to date once the call has run for a second, cleared
 * at its end. The previous SIGINT disposition is restored at the end
 * (outfile.h's cleanup of temporaries relies on it). */
typedef struct cli_progress {
  const cli *c;
  const char *what;
  double t0, drawn; /* start; last drawn (0: never) */
  void (*old)(int);
} cli_progress;
void cli_progress_begin(const cli *c, cli_progress *p, const char *what,
                        qs_run_request *rq);
/* The hook cli_progress_begin sets in rq (which may be NULL: a loop of the
 * CLI's own, such as the stream's, reports through this): draws the line
 * when due (total 0: `done` alone, or only the time when done is 0 too);
 * nonzero once Ctrl-C was pressed. */
int cli_progress_report(cli_progress *p, uint64_t done, uint64_t total);
/* Clears the line and restores SIGINT; nonzero when Ctrl-C was pressed. */
int cli_progress_end(cli_progress *p);
#define CLI_INTERRUPTED 130 /* exit status of a call stopped by Ctrl-C */

/* The commands, each given argv from the command word on. */
int cmd_version(cli *c, int argc, char **argv);
int cmd_devices(cli *c, int argc, char **argv);
int cmd_diff(cli *c, int argc, char **argv);
int cmd_simulate(cli *c, int argc, char **argv);
int cmd_db(cli *c, int argc, char **argv);
int cmd_methods(cli *c, int argc, char **argv);
int cmd_run(cli *c, int argc, char **argv);
int cmd_esrrf(cli *c, int argc, char **argv);
int cmd_stream(cli *c, int argc, char **argv); /* cmd_stream.c */
int cmd_sweep(cli *c, int argc, char **argv);  /* cmd_sweep.c */
int cmd_bench(cli *c, int argc, char **argv);
int cmd_info(cli *c, int argc, char **argv); /* cmd_misc.c */

#endif
