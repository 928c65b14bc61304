/* cmd_sweep.c — `quicksilver sweep`: eSRRF's parameter sweep over one
 * stack (quicksilver_sweep.h) from the command line.
 *
 *   quicksilver sweep IN.tif --radius 0.5:2.5:0.5 --sensitivity 1,2,4
 *       [--temporal avg,var] [--magnification 5] [--csv T.csv]
 *       [--json-out T.json] [--svg PREFIX] [--out-dir DIR] ...
 *
 * Lists are comma-separated values or FIRST:LAST:STEP ranges (LAST
 * included when the steps reach it within 1e-9 of a step). Everything is
 * checked before any work (the lists, the outputs against the input and
 * each other), and every file appears whole or not at all (outfile.h): a
 * refused or failed sweep writes nothing. The table goes to stdout (JSON
 * with --json); --svg writes PREFIX_<score>[_<temporal>].svg heat maps of
 * QnR, RSP and FRC (sensitivity down, radius across, as NanoPyx's QnR
 * map); --out-dir one TIFF per point. A progress line on stderr when it is
 * a terminal (-q: none). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"
#include "provenance.h"
#include "quicksilver_sweep.h"
#include "svg.h"
#include "tiff.h"

static const opt_def sweep_opts[] = {
    {"radius", 0, "LIST", "radii: 1,1.5,2 or FIRST:LAST:STEP (required)"},
    {"sensitivity", 0, "LIST", "sensitivities, as --radius (required)"},
    {"temporal", 0, "LIST", "statistics among avg,var,tac2 (avg)"},
    {"magnification", 0, "M", "magnification (5)"},
    {"no-intensity-weighting", 0, NULL, "RGC without the intensity"},
    {"macro-pixel-correction", 0, NULL,
     "correct the reconstructions (NanoPyx's sweep does not)"},
    {"no-frc", 0, NULL, "no FRC (and no QnR)"},
    {"no-rsp", 0, NULL, "no SQUIRREL RSP/RSE (and no QnR)"},
    {"csv", 0, "FILE", "the table as CSV"},
    {"json-out", 0, "FILE", "the table as JSON"},
    {"svg", 0, "PREFIX", "heat maps PREFIX_qnr.svg, _rsp, _frc"},
    {"out-dir", 0, "DIR",
     "each point's reconstruction as a TIFF (DIR made if missing)"},
    {"channel", 0, "K",
     "the channel to sweep (from 0) of a stack of several"},
    {"impl", 0, "NAME|KIND", "implementation of every step (default: the "
                             "engine's choice per step)"},
    {"memory-mb", 0, "MB", "memory for the statistics (1024; more radii "
                           "than fit take more passes over the frames)"},
    {NULL, 0, NULL, NULL}};

#define SW_MAX_VALUES 256

/* Parses a list of numbers or a FIRST:LAST:STEP range into v (at most
 * SW_MAX_VALUES); 0 and a message naming the flag on failure. */
static int parse_list(const char *flag, const char *text, double *v,
                      size_t *n, char *err, size_t len) {
  *n = 0;
  if (!text || !*text) {
    snprintf(err, len, "--%s: no values", flag);
    return 0;
  }
  if (strchr(text, ':')) {
    double a, b, s;
    char *end;
    a = strtod(text, &end);
    if (*end != ':') goto bad;
    b = strtod(end + 1, &end);
    if (*end != ':') goto bad;
    s = strtod(end + 1, &end);
    if (*end || !isfinite(a) || !isfinite(b) || !isfinite(s)) goto bad;
    if (!(s > 0) || b < a) {
      snprintf(err, len, "--%s: the range %s has no values (FIRST <= LAST "
                         "and STEP > 0)",
               flag, text);
      return 0;
    }
    double count = floor((b - a) / s + 1e-9) + 1;
    if (count > SW_MAX_VALUES) {
      snprintf(err, len, "--%s: %s has %.0f values (at most %d)", flag, text,
               count, SW_MAX_VALUES);
      return 0;
    }
    for (size_t k = 0; k < (size_t)count; k++) v[(*n)++] = a + (double)k * s;
    return 1;
  }
  const char *p = text;
  while (*p) {
    char *end;
    double x = strtod(p, &end);
    if (end == p || !isfinite(x) || (*end && *end != ',')) goto bad;
    if (*n == SW_MAX_VALUES) {
      snprintf(err, len, "--%s: more than %d values", flag, SW_MAX_VALUES);
      return 0;
    }
    v[(*n)++] = x;
    p = *end ? end + 1 : end;
    if (*end && !*p) goto bad;
  }
  return 1;
bad:
  snprintf(err, len, "--%s: '%s' is not a list of numbers (1,2,4) or a "
                     "range FIRST:LAST:STEP",
           flag, text);
  return 0;
}

static const char *const temporal_names[] = {"avg", "var", "tac2"};

static int parse_temporal(const char *text, int *t, size_t *n, char *err,
                          size_t len) {
  *n = 0;
  const char *p = text;
  while (p && *p) {
    size_t k = strcspn(p, ",");
    int found = -1;
    for (int i = 0; i < 3; i++)
      if (strlen(temporal_names[i]) == k && !strncmp(p, temporal_names[i], k))
        found = i;
    if (found < 0 || *n == 3) {
      snprintf(err, len, "--temporal: '%.*s' is not one of avg, var, tac2 "
                         "(each once)",
               (int)k, p);
      return 0;
    }
    t[(*n)++] = found;
    p += k;
    if (*p) p++;
  }
  return 1;
}

/* The sweep's progress on the CLI's line, and Ctrl-C as its cancel. */
static int on_progress(void *ctx, uint64_t done, uint64_t total) {
  return cli_progress_report(ctx, done, total);
}

static void json_num(cJSON *o, const char *k, double v) {
  if (isfinite(v))
    cJSON_AddNumberToObject(o, k, v);
  else
    cJSON_AddNullToObject(o, k);
}

static cJSON *table_json(const qs_esrrf_sweep_result *r, int mag,
                         const char *in, double seconds) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "input", in);
  cJSON_AddNumberToObject(j, "magnification", mag);
  cJSON_AddNumberToObject(j, "seconds", seconds);
  cJSON_AddNumberToObject(j, "passes", (double)r->passes);
  cJSON_AddStringToObject(j, "version", QS_VERSION);
  cJSON_AddStringToObject(j, "impl", r->impl);
  cJSON *pts = cJSON_AddArrayToObject(j, "points");
  for (size_t i = 0; i < r->n_points; i++) {
    const qs_esrrf_sweep_point *p = &r->points[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "radius", p->radius);
    cJSON_AddNumberToObject(o, "sensitivity", p->sensitivity);
    cJSON_AddStringToObject(o, "temporal", temporal_names[p->temporal]);
    json_num(o, "rsp", p->rsp);
    json_num(o, "rse", p->rse);
    json_num(o, "sigma", p->sigma);
    json_num(o, "frc", p->frc);
    json_num(o, "qnr", p->qnr);
    cJSON_AddItemToArray(pts, o);
  }
  return j;
}

static int write_csv(const char *path, const qs_esrrf_sweep_result *r,
                     char *err, size_t len) {
  outfile o;
  int rc = outfile_open(&o, path, err, len);
  if (rc) return rc;
  fprintf(o.f, "temporal,sensitivity,radius,rsp,rse,sigma,frc,qnr\n");
  for (size_t i = 0; i < r->n_points; i++) {
    const qs_esrrf_sweep_point *p = &r->points[i];
    fprintf(o.f, "%s,%.17g,%.17g,%.9g,%.9g,%.9g,%.9g,%.9g\n",
            temporal_names[p->temporal], p->sensitivity, p->radius, p->rsp,
            p->rse, p->sigma, p->frc, p->qnr);
  }
  return outfile_commit(&o, err, len);
}

static int write_json(const char *path, cJSON *j, char *err, size_t len) {
  char *text = cJSON_Print(j);
  if (!text) {
    snprintf(err, len, "%s: out of memory", path);
    return QS_ENOMEM;
  }
  outfile o;
  int rc = outfile_open(&o, path, err, len);
  if (!rc) {
    fputs(text, o.f);
    fputc('\n', o.f);
    rc = outfile_commit(&o, err, len);
  }
  cJSON_free(text);
  return rc;
}

/* The heat map of one score: PREFIX_<score>[_<temporal>].svg (the
 * statistic's name when several are swept). */
static void svg_path(const char *prefix, const char *score, const char *tn,
                     int several, char *path, size_t len) {
  if (several)
    snprintf(path, len, "%s_%s_%s.svg", prefix, score, tn);
  else
    snprintf(path, len, "%s_%s.svg", prefix, score);
}

static const char *const scores[] = {"qnr", "rsp", "frc"};

/* A point's reconstruction:
 * DIR/esrrf_<temporal>_s<sensitivity>_r<radius>.tif */
static void image_path(const char *dir, int temporal, double sens,
                       double radius, char *path, size_t len) {
  snprintf(path, len, "%s/esrrf_%s_s%g_r%g.tif", dir,
           temporal_names[temporal], sens, radius);
}

/* --out-dir before any work: made when missing (its parent must exist);
 * when it exists, no point's image may be the input or one of outs (the
 * table's files). A status with a message. */
static int out_dir(const char *dir, const char *input, const int *temporal,
                   size_t nt, const double *sens, size_t ns,
                   const double *radii, size_t nr, const char *const *outs,
                   size_t n_out, int *made, char *err, size_t len) {
  char why[1024];
  int rc = outdir_make(dir, made, why, sizeof why);
  if (rc) return snprintf(err, len, "--out-dir %s", why), rc;
  if (*made) return QS_OK; /* new and empty: nothing in it is the input */
  /* each image with the table's files: outfile_check compares outputs
   * pairwise, and a grid may have thousands of points */
  const char **all = malloc((n_out + 1) * sizeof *all);
  char path[4096];
  if (!all) return snprintf(err, len, "out of memory"), QS_ENOMEM;
  for (size_t i = 0; i < n_out; i++) all[i + 1] = outs[i];
  for (size_t t = 0; !rc && t < nt; t++)
    for (size_t si = 0; !rc && si < ns; si++)
      for (size_t ri = 0; !rc && ri < nr; ri++) {
        image_path(dir, temporal[t], sens[si], radii[ri], path, sizeof path);
        all[0] = path;
        rc = outfile_check(all, n_out + 1, &input, 1, err, len);
      }
  free(all);
  return rc;
}

/* The three heat maps of each statistic. */
static int write_svgs(const char *prefix, const qs_esrrf_sweep_result *r,
                      char *err, size_t len) {
  size_t nr = r->n_radii, ns = r->n_sensitivities;
  char (*xl)[32] = calloc(nr, 32), (*yl)[32] = calloc(ns, 32);
  const char **xp = calloc(nr, sizeof *xp), **yp = calloc(ns, sizeof *yp);
  double *v = calloc(nr * ns, sizeof *v);
  int rc = !xl || !yl || !xp || !yp || !v ? QS_ENOMEM : QS_OK;
  if (rc) snprintf(err, len, "--svg: out of memory");
  for (size_t x = 0; !rc && x < nr; x++) {
    snprintf(xl[x], 32, "%g", r->points[x].radius);
    xp[x] = xl[x];
  }
  for (size_t y = 0; !rc && y < ns; y++) {
    snprintf(yl[y], 32, "%g", r->points[y * nr].sensitivity);
    yp[y] = yl[y];
  }
  for (size_t t = 0; !rc && t < r->n_temporal; t++)
    for (int k = 0; !rc && k < 3; k++) {
      const qs_esrrf_sweep_point *b = &r->points[t * nr * ns];
      for (size_t i = 0; i < nr * ns; i++)
        v[i] = k == 0 ? b[i].qnr : k == 1 ? b[i].rsp : b[i].frc;
      char path[4096], title[128];
      const char *tn = temporal_names[b->temporal];
      svg_path(prefix, scores[k], tn, r->n_temporal > 1, path, sizeof path);
      snprintf(title, sizeof title, "eSRRF sweep: %s (%s)%s",
               k == 0 ? "QnR" : k == 1 ? "RSP" : "FRC resolution (px)", tn,
               k == 2 ? ", lower is finer" : ", higher is better");
      rc = svg_heatmap(path, title, "radius", "sensitivity", xp, nr, yp, ns,
                       v, err, len);
    }
  free(xl);
  free(yl);
  free(xp);
  free(yp);
  free(v);
  return rc;
}

/* What made the images and how they were written, for their metadata. */
typedef struct image_meta {
  const qs_method_desc *d; /* eSRRF's descriptor */
  const tiff_info *in;     /* the input's, for the pixel size */
  const char *input;       /* its path */
  long channel;            /* the channel swept, -1: the only one */
  int mag, iw, mpc;
} image_meta;

/* Each point's reconstruction as a TIFF with the input's pixel size / M
 * and its provenance: eSRRF's parameters at the point, the
 * implementations the sweep's steps ran, the input (and channel). */
static int write_images(const char *dir, const qs_esrrf_sweep_result *r,
                        const image_meta *im, char *err, size_t len) {
  for (size_t i = 0; i < r->n_points; i++) {
    const qs_esrrf_sweep_point *p = &r->points[i];
    char path[4096], text[128];
    image_path(dir, p->temporal, p->sensitivity, p->radius, path,
               sizeof path);
    qs_param pv[] = {{"magnification", im->mag, NULL},
                     {"radius", p->radius, NULL},
                     {"sensitivity", p->sensitivity, NULL},
                     {"intensity_weighting", im->iw, NULL},
                     {"temporal", 0, temporal_names[p->temporal]},
                     {"macro_pixel_correction", im->mpc, NULL}};
    double values[QS_MAX_PARAMS];
    tiff_meta m;
    tiff_meta_plain(&m, 1);
    tiff_meta_scaled(&m, im->in, 1, p->recon.rows, p->recon.cols);
    cJSON *j = NULL;
    if (!qs_params_resolve(im->d->params, im->d->n_params, pv,
                           sizeof pv / sizeof *pv, values, text,
                           sizeof text))
      j = prov_new(im->d, values, r->impl, im->input);
    if (j) {
      cJSON_AddBoolToObject(j, "sweep", 1);
      if (im->channel >= 0)
        cJSON_AddNumberToObject(j, "channel", (double)im->channel);
    }
    if (prov_text(j, m.provenance, sizeof m.provenance))
      m.provenance[0] = 0; /* what does not fit is left out */
    int rc = tiff_write_meta(path, &p->recon, 0, &m, err, len);
    if (rc) return rc;
  }
  return QS_OK;
}

int cmd_sweep(cli *c, int argc, char **argv) {
  args a;
  CLI_ARGS_OR_RETURN(cli_args(
      c, argc, argv,
      "sweep IN.tif --radius LIST --sensitivity LIST [--temporal LIST] "
      "[--magnification M] [--csv FILE] [--json-out FILE] [--svg PREFIX] "
      "[--out-dir DIR]",
      sweep_opts, NULL, 0, &a));
  char err[2048];
  if (a.n_pos != 1)
    return cli_usage("sweep: give one input stack (IN.tif), got %zu",
                     a.n_pos);
  double radii[SW_MAX_VALUES], sens[SW_MAX_VALUES];
  size_t nr, ns, nt = 1;
  int temporal[3] = {0};
  if (!args_value(&a, "radius") || !args_value(&a, "sensitivity"))
    return cli_usage("sweep: --radius and --sensitivity are required");
  if (!parse_list("radius", args_value(&a, "radius"), radii, &nr, err,
                  sizeof err) ||
      !parse_list("sensitivity", args_value(&a, "sensitivity"), sens, &ns,
                  err, sizeof err))
    return cli_usage("sweep: %s", err);
  if (args_value(&a, "temporal") &&
      !parse_temporal(args_value(&a, "temporal"), temporal, &nt, err,
                      sizeof err))
    return cli_usage("sweep: %s", err);
  size_t mag = 5, mem = 0;
  if (args_value(&a, "magnification") &&
      args_size(args_value(&a, "magnification"), 1, 64, &mag))
    return cli_usage("sweep: --magnification: '%s' is not an integer from "
                     "1 to 64",
                     args_value(&a, "magnification"));
  if (args_value(&a, "memory-mb") &&
      args_size(args_value(&a, "memory-mb"), 1, (size_t)1 << 30, &mem))
    return cli_usage("sweep: --memory-mb: '%s' is not a positive integer",
                     args_value(&a, "memory-mb"));
  const char *csv = args_value(&a, "csv"), *jout = args_value(&a, "json-out");
  const char *svg = args_value(&a, "svg"), *dir = args_value(&a, "out-dir");
  long channel = -1;
  size_t ch;
  if (args_value(&a, "channel") &&
      args_size(args_value(&a, "channel"), 0, 1 << 20, &ch))
    return cli_usage("sweep: --channel: '%s' is not a channel number (from "
                     "0)",
                     args_value(&a, "channel"));
  if (args_value(&a, "channel")) channel = (long)ch;
  /* the table's files and heat maps: none the input, nor two the same */
  char svgs[9][4096];
  const char *outs[11];
  size_t n_out = 0;
  if (csv) outs[n_out++] = csv;
  if (jout) outs[n_out++] = jout;
  for (size_t t = 0; svg && t < nt; t++)
    for (int k = 0; k < 3; k++) {
      svg_path(svg, scores[k], temporal_names[temporal[t]], nt > 1,
               svgs[t * 3 + (size_t)k], sizeof svgs[0]);
      outs[n_out++] = svgs[t * 3 + (size_t)k];
    }
  int rc = outfile_check(outs, n_out, (const char *const *)a.pos, 1, err,
                         sizeof err);
  if (rc == QS_EINVAL) return cli_usage("sweep: %s", err);
  if (rc) return cli_fail("sweep: %s", err);
  /* the input's axes: one channel's frames are swept, never a mix */
  tiff_info info;
  if ((rc = tiff_info_of(a.pos[0], &info, err, sizeof err)))
    return rc == QS_EINVAL ? cli_usage("%s", err) : cli_fail("%s", err);
  const tiff_meta *im = &info.meta;
  if (im->slices > 1 && im->frames > 1)
    return cli_usage("sweep: %s has %zu slices (Z) x %zu frames (T); a "
                     "sweep runs on one sequence of frames: split the stack "
                     "by slice first",
                     a.pos[0], im->slices, im->frames);
  if (im->channels > 1 && channel < 0)
    return cli_usage("sweep: %s has %zu channels: choose one with "
                     "--channel K (0 to %zu)",
                     a.pos[0], im->channels, im->channels - 1);
  if (channel >= 0 && (size_t)channel >= im->channels)
    return cli_usage("sweep: --channel %ld: %s has %zu channel%s (0 to %zu)",
                     channel, a.pos[0], im->channels,
                     im->channels == 1 ? "" : "s", im->channels - 1);
  int made = 0;
  if (dir && (rc = out_dir(dir, a.pos[0], temporal, nt, sens, ns, radii, nr,
                           outs, n_out, &made, err, sizeof err)))
    return rc == QS_EINVAL ? cli_usage("sweep: %s", err)
                           : cli_fail("sweep: %s", err);

  qs_image in = {0};
  if (im->channels > 1) {
    qs_image all = {0};
    if (!(rc = tiff_read(a.pos[0], &all, err, sizeof err))) {
      rc = tiff_channel(&all, im, (size_t)channel, 0, SIZE_MAX, &in);
      if (rc) snprintf(err, sizeof err, "%s: out of memory", a.pos[0]);
    }
    qs_image_free(&all);
  } else {
    rc = tiff_read(a.pos[0], &in, err, sizeof err);
  }
  if (rc) return rc == QS_EINVAL ? cli_usage("%s", err) : cli_fail("%s", err);
  qs_engine *e;
  if (cli_engine(c, &e)) {
    qs_image_free(&in);
    return CLI_FAIL;
  }
  cli_progress pr;
  qs_esrrf_sweep_options o = {
      .radii = radii,
      .n_radii = nr,
      .sensitivities = sens,
      .n_sensitivities = ns,
      .temporal = temporal,
      .n_temporal = nt,
      .magnification = (int)mag,
      .no_intensity_weighting =
          args_value(&a, "no-intensity-weighting") != NULL,
      .macro_pixel_correction =
          args_value(&a, "macro-pixel-correction") != NULL,
      .no_frc = args_value(&a, "no-frc") != NULL,
      .no_rsp = args_value(&a, "no-rsp") != NULL,
      .keep_images = dir != NULL,
      .impl = args_value(&a, "impl"),
      .memory_mb = (long)mem,
      .progress = on_progress,
      .progress_ctx = &pr};
  qs_esrrf_sweep_result r = {0};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cli_progress_begin(c, &pr, "sweep (frames x radii)", NULL);
  int st = qs_esrrf_sweep(e, &in, &o, &r, err, sizeof err);
  int stopped = cli_progress_end(&pr);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) +
                1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  qs_image_free(&in);
  cli_record_warn(c);
  if (st && made) rmdir(dir); /* made for this sweep, left empty */
  if (st == QS_ECANCELLED && stopped) {
    cli_fail("sweep: cancelled (Ctrl-C); nothing written");
    return CLI_INTERRUPTED;
  }
  if (st) return cli_status_exit(st) == CLI_USAGE
                     ? cli_usage("sweep: %s", err)
                     : cli_fail("sweep: %s", err);
  cJSON *j = table_json(&r, (int)mag, a.pos[0], secs);
  rc = CLI_OK;
  if (csv && write_csv(csv, &r, err, sizeof err)) rc = cli_fail("%s", err);
  if (!rc && jout && write_json(jout, j, err, sizeof err))
    rc = cli_fail("%s", err);
  if (!rc && svg && write_svgs(svg, &r, err, sizeof err))
    rc = cli_fail("%s", err);
  image_meta imeta = {.d = qs_method_find(e, "esrrf"),
                      .in = &info,
                      .input = a.pos[0],
                      .channel = im->channels > 1 ? channel : -1,
                      .mag = (int)mag,
                      .iw = !o.no_intensity_weighting,
                      .mpc = o.macro_pixel_correction};
  if (!rc && dir && write_images(dir, &r, &imeta, err, sizeof err))
    rc = cli_fail("%s", err);
  if (!rc && c->json) {
    rc = cli_json_out(j);
    j = NULL;
  } else if (!rc) {
    printf("%-8s %11s %7s %9s %9s %9s %9s\n", "temporal", "sensitivity",
           "radius", "RSP", "RSE", "FRC", "QnR");
    size_t best = 0;
    for (size_t i = 0; i < r.n_points; i++) {
      const qs_esrrf_sweep_point *p = &r.points[i];
      printf("%-8s %11g %7g %9.4f %9.4g %9.4g %9.4f\n",
             temporal_names[p->temporal], p->sensitivity, p->radius, p->rsp,
             p->rse, p->frc, p->qnr);
      if (p->qnr > r.points[best].qnr) best = i;
    }
    fflush(stdout);
    cli_note(c, "sweep: %zu points in %.3f s (%zu pass%s); best QnR %.4f at "
                "sensitivity %g, radius %g (%s)\n",
             r.n_points, secs, r.passes, r.passes == 1 ? "" : "es",
             r.points[best].qnr, r.points[best].sensitivity,
             r.points[best].radius, temporal_names[r.points[best].temporal]);
  }
  cJSON_Delete(j);
  qs_esrrf_sweep_free(&r);
  return rc;
}
