/* cmd_misc.c — the small commands: devices, diff, simulate, info. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "outfile.h"
#include "simulate.h"
#include "tiff.h"

/* ------------------------------------------------------------- devices */

static cJSON *device_json(const qs_device_info *d) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "slug", d->name);
  cJSON_AddStringToObject(j, "fingerprint", d->fingerprint);
  cJSON_AddStringToObject(j, "name", d->model);
  cJSON_AddStringToObject(j, "platform", d->platform);
  cJSON_AddStringToObject(j, "vendor", d->vendor);
  cJSON_AddStringToObject(j, "driver", d->driver);
  cJSON_AddStringToObject(j, "version", d->version);
  cJSON_AddBoolToObject(j, "gpu", d->gpu);
  cJSON_AddBoolToObject(j, "shares_host_cores", d->shares_host_cores);
  cJSON_AddNumberToObject(j, "compute_units", d->compute_units);
  cJSON_AddNumberToObject(j, "clock_mhz", d->clock_mhz);
  cJSON_AddNumberToObject(j, "global_mem", (double)d->global_mem);
  cJSON_AddNumberToObject(j, "max_alloc", (double)d->max_alloc);
  cJSON_AddNumberToObject(j, "local_mem", (double)d->local_mem);
  cJSON_AddNumberToObject(j, "max_work_group", (double)d->max_work_group);
  cJSON_AddBoolToObject(j, "fp64", d->fp64);
  return j;
}

enum { MAX_DEVICES = 16 };

int cmd_devices(cli *c, int argc, char **argv) {
  args a;
  CLI_ARGS_OR_RETURN(
      cli_args(c, argc, argv, "devices [--json]", NULL, NULL, 0, &a));
  if (a.n_pos) return cli_usage("devices: unexpected argument '%s'", a.pos[0]);
  /* Devices need no store: a private one in memory. */
  qs_engine_options eo = {
      .db_path = ":memory:", .no_opencl = c->no_opencl, .threads = c->threads};
  qs_engine *e = NULL;
  int rc = qs_engine_open(&e, &eo);
  qs_device_info dev[MAX_DEVICES];
  size_t n = 0;
  if (!rc) rc = qs_engine_devices(e, dev, MAX_DEVICES, &n);
  if (rc) {
    rc = rc == QS_EENV
             ? cli_usage("%s", qs_engine_error(e))
             : cli_fail("%s", e ? qs_engine_error(e) : "out of memory");
    qs_engine_close(e);
    return rc;
  }
  if (n > MAX_DEVICES) n = MAX_DEVICES;
  const qs_device_info *cpu = &dev[0];
  if (c->json) {
    cJSON *j = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(j, "cpu");
    cJSON_AddStringToObject(o, "name", cpu->model);
    cJSON_AddNumberToObject(o, "cores", cpu->cores);
    cJSON_AddStringToObject(o, "fingerprint", cpu->fingerprint);
    cJSON_AddNumberToObject(o, "threads", cpu->threads);
    cJSON *cl = cJSON_AddArrayToObject(j, "opencl");
    for (size_t i = 1; i < n; i++)
      cJSON_AddItemToArray(cl, device_json(&dev[i]));
    if (n < 2)
      cJSON_AddStringToObject(j, "opencl_why", qs_engine_opencl_why(e));
    qs_engine_close(e);
    return cli_json_out(j);
  }
  printf("cpu: %s, %d cores\n", cpu->model, cpu->cores);
  if (n < 2) printf("opencl: no devices (%s)\n", qs_engine_opencl_why(e));
  for (size_t i = 1; i < n; i++) {
    const qs_device_info *d = &dev[i];
    printf("opencl:%s\n  fingerprint  %s\n  device       %s (%s, %s)\n"
           "  platform     %s\n  kind         %s, %u compute units at %u "
           "MHz%s\n  memory       %.2f GiB global, %.2f GiB max allocation, "
           "%llu KiB local\n  work group   %zu max, fp64 %s\n",
           d->name, d->fingerprint, d->model, d->vendor, d->version,
           d->platform, d->gpu ? "GPU" : "CPU", d->compute_units,
           d->clock_mhz,
           d->shares_host_cores ? ", on the host's cores" : "",
           (double)d->global_mem / (1u << 30),
           (double)d->max_alloc / (1u << 30),
           (unsigned long long)(d->local_mem >> 10), d->max_work_group,
           d->fp64 ? "yes" : "no");
  }
  qs_engine_close(e);
  return CLI_OK;
}

/* ---------------------------------------------------------------- diff */

typedef struct diff_stats {
  size_t n, nan_mismatch;
  double max_abs, max_ref, rmse, pearson;
} diff_stats;

/* Differences of b against a (the reference) over pixels finite in both;
 * a pixel NaN in one and not the other counts as a mismatch. */
static void diff_of(const qs_image *a, const qs_image *b, diff_stats *d) {
  size_t n = a->frames * a->rows * a->cols;
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0, sq = 0;
  memset(d, 0, sizeof *d);
  for (size_t i = 0; i < n; i++) {
    double x = a->data[i], y = b->data[i];
    if (isnan(x) != isnan(y)) d->nan_mismatch++;
    if (!isfinite(x) || !isfinite(y)) continue;
    double e = fabs(x - y);
    if (e > d->max_abs) d->max_abs = e;
    if (fabs(x) > d->max_ref) d->max_ref = fabs(x);
    sq += e * e;
    sa += x, sb += y, saa += x * x, sbb += y * y, sab += x * y;
    d->n++;
  }
  double m = d->n ? (double)d->n : 1;
  d->rmse = sqrt(sq / m);
  double va = saa - sa * sa / m, vb = sbb - sb * sb / m,
         cov = sab - sa * sb / m;
  d->pearson = va > 0 && vb > 0 ? cov / sqrt(va * vb) : NAN;
  if (va <= 0 && vb <= 0 && d->max_abs == 0) d->pearson = 1;
}

static cJSON *shape_json(const qs_image *img) {
  cJSON *s = cJSON_CreateArray();
  cJSON_AddItemToArray(s, cJSON_CreateNumber((double)img->frames));
  cJSON_AddItemToArray(s, cJSON_CreateNumber((double)img->rows));
  cJSON_AddItemToArray(s, cJSON_CreateNumber((double)img->cols));
  return s;
}

static void json_number(cJSON *j, const char *k, double v) {
  if (isfinite(v))
    cJSON_AddNumberToObject(j, k, v);
  else
    cJSON_AddNullToObject(j, k);
}

int cmd_diff(cli *c, int argc, char **argv) {
  static const opt_def opts[] = {{"tolerance", 0, "REL",
                                  "exit 1 when the relative difference "
                                  "(max |a-b| / max |a|) exceeds REL"},
                                 {NULL, 0, NULL, NULL}};
  args a;
  CLI_ARGS_OR_RETURN(cli_args(c, argc, argv, "diff A.tif B.tif [options]",
                              opts, NULL, 0, &a));
  if (a.n_pos != 2)
    return cli_usage("diff: needs two TIFF files (got %zu)", a.n_pos);
  const char *tol_text = args_value(&a, "tolerance");
  double tol = -1;
  if (tol_text) {
    if (args_number(tol_text, 0, HUGE_VAL, &tol))
      return cli_usage("diff: --tolerance: \"%s\" is not a number >= 0",
                       tol_text);
  }
  qs_image img[2] = {{0}, {0}};
  char err[1024];
  for (int k = 0; k < 2; k++)
    if (tiff_read(a.pos[k], &img[k], err, sizeof err)) {
      qs_image_free(&img[0]);
      return cli_fail("%s", err);
    }
  int same = img[0].frames == img[1].frames && img[0].rows == img[1].rows &&
             img[0].cols == img[1].cols;
  diff_stats d = {0};
  if (same) diff_of(&img[0], &img[1], &d);
  double rel = d.max_ref > 0   ? d.max_abs / d.max_ref
               : d.max_abs > 0 ? INFINITY
                               : 0;
  int rc = !same || (tol >= 0 && !(rel <= tol)) || d.nan_mismatch ? CLI_FAIL
                                                                  : CLI_OK;
  if (c->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "shape_a", shape_json(&img[0]));
    cJSON_AddItemToObject(j, "shape_b", shape_json(&img[1]));
    cJSON_AddBoolToObject(j, "same_shape", same);
    if (same) {
      cJSON_AddNumberToObject(j, "pixels", (double)d.n);
      json_number(j, "max_abs", d.max_abs);
      json_number(j, "max_rel", rel);
      json_number(j, "rmse", d.rmse);
      json_number(j, "pearson", d.pearson);
      cJSON_AddNumberToObject(j, "nan_mismatch", (double)d.nan_mismatch);
    }
    if (cli_json_out(j)) rc = CLI_FAIL;
  } else {
    printf("shape   %zux%zux%zu vs %zux%zux%zu (frames x rows x cols)\n",
           img[0].frames, img[0].rows, img[0].cols, img[1].frames, img[1].rows,
           img[1].cols);
    if (same)
      printf("max abs %.9g\nmax rel %.9g (max |a-b| / max |a|)\nrmse    "
             "%.9g\npearson %.9f\nnan     %zu pixels NaN in one only\n",
             d.max_abs, rel, d.rmse, d.pearson, d.nan_mismatch);
    else
      fprintf(stderr, "quicksilver: diff: shapes differ\n");
  }
  qs_image_free(&img[0]);
  qs_image_free(&img[1]);
  return rc;
}

/* ------------------------------------------------------------ simulate */

int cmd_simulate(cli *c, int argc, char **argv) {
  static const opt_def opts[] = {
      {"output", 'o', "FILE", "the stack to write (TIFF, float32)"},
      {"truth", 0, "FILE",
       "ground truth as CSV (one row per emitter and "
       "frame it is on)"},
      {"size", 0, "RxC", "rows x columns (sets --rows and --cols)"},
      {NULL, 0, NULL, NULL}};
  args a;
  CLI_ARGS_OR_RETURN(cli_args(c, argc, argv, "simulate -o FILE [options]",
                              opts, sim_params, SIM_N, &a));
  const char *out = args_value(&a, "output");
  if (!out) return cli_usage("simulate: -o FILE is required");
  if (a.n_pos)
    return cli_usage("simulate: unexpected argument '%s'", a.pos[0]);
  const char *size = args_value(&a, "size");
  char rows[32], cols[32];
  if (size) {
    size_t rc2[2];
    if (args_dims(size, 2, rc2))
      return cli_usage("simulate: --size: \"%s\" is not ROWSxCOLS", size);
    snprintf(rows, sizeof rows, "%zu", rc2[0]);
    snprintf(cols, sizeof cols, "%zu", rc2[1]);
    for (size_t i = 0; i < a.n_params; i++)
      if (a.params[i].name == sim_params[SIM_ROWS].name ||
          a.params[i].name == sim_params[SIM_COLS].name)
        return cli_usage("simulate: --size and --rows/--cols together");
    if (a.n_params + 2 > QS_MAX_PARAMS) return cli_usage("too many options");
    a.params[a.n_params++] = (qs_param){sim_params[SIM_ROWS].name, 0, rows};
    a.params[a.n_params++] = (qs_param){sim_params[SIM_COLS].name, 0, cols};
  }
  double v[SIM_N];
  char err[1024];
  if (qs_params_resolve(sim_params, SIM_N, a.params, a.n_params, v, err,
                        sizeof err))
    return cli_usage("simulate: %s", err);
  const char *truth_path = args_value(&a, "truth");
  /* Before the work: both outputs writable files, and not the same one. */
  const char *outs[] = {out, truth_path};
  int bad = outfile_check(outs, truth_path ? 2 : 1, NULL, 0, err, sizeof err);
  if (bad) return bad == QS_EINVAL ? cli_usage("simulate: %s", err)
                                   : cli_fail("simulate: %s", err);
  qs_image img;
  sim_truth truth;
  if (simulate(v, &img, truth_path ? &truth : NULL, err, sizeof err))
    return cli_fail("%s", err);
  /* the stack's pixel size, as a microscope's file would carry it */
  tiff_meta m;
  tiff_meta_plain(&m, img.frames);
  m.pixel_x = m.pixel_y = v[SIM_PIXEL_SIZE] * 1e-3;
  snprintf(m.unit, sizeof m.unit, "micron");
  int rc = tiff_write_meta(out, &img, 0, &m, err, sizeof err);
  if (!rc && truth_path)
    rc = sim_truth_write(&truth, v[SIM_PIXEL_SIZE], truth_path, err,
                         sizeof err);
  if (truth_path) sim_truth_free(&truth);
  qs_image_free(&img);
  if (rc) return cli_fail("%s", err);
  cli_note(c, "simulate: %zux%zux%zu written to %s%s%s\n", (size_t)v[0],
           (size_t)v[SIM_ROWS], (size_t)v[SIM_COLS], out,
           truth_path ? ", truth to " : "", truth_path ? truth_path : "");
  return CLI_OK;
}

/* ---------------------------------------------------------------- info */

/* "N channels x " style pieces of a stack's axes; the axes of size 1 are
 * left out (all of them: "1 frame"). */
static void axes_text(const tiff_meta *m, char *buf, size_t len) {
  size_t n = 0, v[3] = {m->channels, m->slices, m->frames};
  static const char *const one[3] = {"channel", "slice", "frame"};
  buf[0] = 0;
  for (int i = 0; i < 3; i++)
    if (v[i] > 1 && n < len)
      n += (size_t)snprintf(buf + n, len - n, "%s%zu %ss", n ? " x " : "",
                            v[i], one[i]);
  if (!n) snprintf(buf, len, "1 frame");
}

int cmd_info(cli *c, int argc, char **argv) {
  args a;
  CLI_ARGS_OR_RETURN(
      cli_args(c, argc, argv, "info FILE.tif [--json]", NULL, NULL, 0, &a));
  if (a.n_pos != 1) return cli_usage("info: give one TIFF file");
  tiff_info in;
  char err[1024];
  if (tiff_info_of(a.pos[0], &in, err, sizeof err)) return cli_fail("%s", err);
  const tiff_meta *m = &in.meta;
  cJSON *prov = m->provenance[0] ? cJSON_Parse(m->provenance) : NULL;
  if (c->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "path", a.pos[0]);
    cJSON_AddNumberToObject(j, "pages", (double)in.pages);
    cJSON_AddNumberToObject(j, "rows", (double)in.rows);
    cJSON_AddNumberToObject(j, "cols", (double)in.cols);
    cJSON_AddNumberToObject(j, "channels", (double)m->channels);
    cJSON_AddNumberToObject(j, "slices", (double)m->slices);
    cJSON_AddNumberToObject(j, "frames", (double)m->frames);
    cJSON_AddStringToObject(j, "order", m->order);
    if (m->pixel_x > 0) {
      cJSON_AddNumberToObject(j, "pixel_size", m->pixel_x);
      cJSON_AddNumberToObject(j, "pixel_size_y", m->pixel_y);
      cJSON_AddStringToObject(j, "unit", m->unit);
    } else {
      cJSON_AddNullToObject(j, "pixel_size");
    }
    if (prov)
      cJSON_AddItemToObject(j, "provenance", prov);
    else if (m->provenance[0])
      cJSON_AddStringToObject(j, "provenance", m->provenance);
    else
      cJSON_AddNullToObject(j, "provenance");
    return cli_json_out(j);
  }
  char axes[128];
  axes_text(m, axes, sizeof axes);
  printf("%s: %zu page%s of %zux%zu (rows x cols)\n", a.pos[0], in.pages,
         in.pages == 1 ? "" : "s", in.rows, in.cols);
  printf("axes        %s (pages in %s order, fastest first)\n", axes,
         m->order);
  if (m->pixel_x > 0)
    printf("pixel size  %.6g x %.6g %s (x, y)\n", m->pixel_x, m->pixel_y,
           m->unit);
  else
    printf("pixel size  unknown\n");
  if (!m->provenance[0]) {
    printf("provenance  none (not written by quicksilver)\n");
  } else {
    printf("provenance  %s\n", m->provenance);
  }
  cJSON_Delete(prov);
  return CLI_OK;
}
