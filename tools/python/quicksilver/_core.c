/* _core.c — the CPython extension of the quicksilver package.
 *
 * A thin layer over the public C API (quicksilver.h only): an Engine type
 * that opens, runs, benchmarks and lists, and converts between numpy arrays
 * and images. The Python modules beside it (__init__.py) turn other dtypes
 * and shapes into what this layer accepts, name keywords, and build the
 * Result and Report objects; the checks here are the contract, not the user
 * interface.
 *
 * Memory: inputs are wrapped, never copied (qs_image_wrap over the array's
 * buffer, which the call keeps alive). Outputs stay where the engine
 * allocated them: each becomes an ndarray whose base is a capsule owning
 * the image, released with qs_image_free when the last view goes. They do not
 * depend on the engine and outlive it.
 *
 * Threads: the GIL is released for the whole qs_method_run / qs_method_benchmark,
 * which run on a thread of their own while the caller watches for Ctrl-C
 * and passes progress to Python ("progress and Ctrl-C" below). An engine
 * serves one thread at a time (quicksilver.h): a lock per Engine makes a
 * second thread wait (without the GIL) instead of racing.
 *
 * Errors: a nonzero status raises the Python class registered for it by
 * _set_errors (quicksilver._errors), called as cls(message, status, name).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include <pthread.h>
#include <pythread.h>
#include <time.h>

#include "quicksilver.h"
#include "quicksilver_esrrf.h"
#include "quicksilver_sweep.h"

#define MAX_SLOTS 16

/* status (int) -> exception class; set once by _set_errors. */
static PyObject *error_map;

/* Raises the registered class for `status` with `msg`. Returns NULL. */
static PyObject *raise_status(int status, const char *msg) {
  PyObject *cls = NULL, *key = PyLong_FromLong(status);
  if (key && error_map) cls = PyDict_GetItemWithError(error_map, key);
  Py_XDECREF(key);
  if (PyErr_Occurred()) return NULL;
  if (!cls) {
    PyErr_Format(PyExc_RuntimeError, "%s (%s)", msg, qs_status_name(status));
    return NULL;
  }
  PyObject *exc =
      PyObject_CallFunction(cls, "sis", msg, status, qs_status_name(status));
  if (exc) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

/* Raises the class registered under "closed" (ClosedError) for a closed
 * engine or stream: what = "engine" or "stream". Returns NULL. */
static PyObject *raise_closed(const char *what) {
  char msg[96];
  snprintf(msg, sizeof msg, "the %s is closed", what);
  PyObject *cls = error_map ? PyDict_GetItemString(error_map, "closed") : NULL;
  if (!cls) return raise_status(QS_EINVAL, msg);
  PyObject *exc = PyObject_CallFunction(cls, "sis", msg, QS_EINVAL,
                                        qs_status_name(QS_EINVAL));
  if (exc) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
  return NULL;
}

/* The UTF-8 of a str, refused (ParameterError naming `what`) when it holds
 * a NUL: the library reads C strings, so "5\0junk" would be taken for
 * "5". NULL with the error set. */
static const char *utf8_whole(PyObject *s, const char *what) {
  Py_ssize_t n;
  const char *u = PyUnicode_AsUTF8AndSize(s, &n);
  if (u && strlen(u) != (size_t)n) {
    char msg[160];
    snprintf(msg, sizeof msg, "%s \"%.60s\" holds a NUL character", what, u);
    raise_status(QS_EPARAM, msg);
    return NULL;
  }
  return u;
}

static PyObject *set_errors(PyObject *self, PyObject *map) {
  (void)self;
  if (!PyDict_Check(map)) {
    PyErr_SetString(PyExc_TypeError, "_set_errors expects a dict");
    return NULL;
  }
  Py_INCREF(map);
  Py_XSETREF(error_map, map);
  Py_RETURN_NONE;
}

/* [(code, name, message), ...] of every status. */
static PyObject *statuses(PyObject *self, PyObject *noargs) {
  (void)self;
  (void)noargs;
  PyObject *list = PyList_New(0);
  for (int s = 0; list && s < QS_STATUS_COUNT; s++) {
    PyObject *t =
        Py_BuildValue("(iss)", s, qs_status_name(s), qs_status_message(s));
    if (!t || PyList_Append(list, t) < 0) Py_CLEAR(list);
    Py_XDECREF(t);
  }
  return list;
}

static const char *type_name(qs_param_type t) {
  switch (t) {
  case QS_PARAM_INT:
    return "int";
  case QS_PARAM_FLOAT:
    return "float";
  case QS_PARAM_BOOL:
    return "bool";
  case QS_PARAM_ENUM:
    return "enum";
  }
  return "unknown";
}

/* ------------------------------------------------------------ outputs */

static const char IMAGE_CAPSULE[] = "quicksilver.image";

static void image_capsule_free(PyObject *cap) {
  qs_image *img = PyCapsule_GetPointer(cap, IMAGE_CAPSULE);
  if (!img) {
    PyErr_Clear();
    return;
  }
  qs_image_free(img);
  PyMem_RawFree(img);
}

/* Hands *img to a new ndarray (frames, rows, cols) without copying; *img
 * is emptied whether or not it succeeds (on failure it is freed). */
static PyObject *image_to_array(qs_image *img) {
  npy_intp dims[3] = {(npy_intp)img->frames, (npy_intp)img->rows,
                      (npy_intp)img->cols};
  qs_image *held = PyMem_RawMalloc(sizeof *held);
  if (!held) {
    qs_image_free(img);
    return PyErr_NoMemory();
  }
  *held = *img;
  memset(img, 0, sizeof *img);
  PyObject *cap = PyCapsule_New(held, IMAGE_CAPSULE, image_capsule_free);
  if (!cap) {
    qs_image_free(held);
    PyMem_RawFree(held);
    return NULL;
  }
  if (!held->data) /* an empty output: numpy allocates its own zero bytes */
    return Py_DECREF(cap), PyArray_SimpleNew(3, dims, NPY_FLOAT32);
  PyObject *arr = PyArray_SimpleNewFromData(3, dims, NPY_FLOAT32, held->data);
  if (!arr) {
    Py_DECREF(cap);
    return NULL;
  }
  if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) { /* steals cap */
    Py_DECREF(arr);
    return NULL;
  }
  return arr;
}

/* ------------------------------------------------------------- engine */

typedef struct {
  PyObject_HEAD qs_engine *e;
  PyThread_type_lock lock;
  Py_ssize_t streams; /* open live streams and plans: the engine must
                         outlive them */
} EngineObject;

/* Takes the engine's lock, waiting without the GIL if another thread
 * holds it. */
static void engine_lock(EngineObject *self) {
  if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
    PyThreadState *ts = PyEval_SaveThread();
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    PyEval_RestoreThread(ts);
  }
}

static void engine_unlock(EngineObject *self) {
  PyThread_release_lock(self->lock);
}

/* Releases the engine's lock after a call that returned rc; on failure
 * raises with the engine's message (read before anyone else can use the
 * engine). Returns rc. */
static int unlock_status(EngineObject *self, int rc) {
  char msg[1024] = "";
  int closed = !self->e; /* closed by another thread while we waited */
  if (rc != QS_OK && !closed)
    snprintf(msg, sizeof msg, "%s", qs_engine_error(self->e));
  engine_unlock(self);
  if (rc != QS_OK && closed) rc = QS_EINVAL, raise_closed("engine");
  else if (rc != QS_OK) raise_status(rc, msg);
  return rc;
}

/* A list of n items made by item(base, k); NULL with the error set. */
static PyObject *list_of(size_t n, PyObject *(*item)(const void *, size_t),
                         const void *base) {
  PyObject *l = PyList_New(0);
  for (size_t k = 0; l && k < n; k++) {
    PyObject *x = item(base, k);
    if (!x || PyList_Append(l, x) < 0) Py_CLEAR(l);
    Py_XDECREF(x);
  }
  return l;
}

static int engine_ready(EngineObject *self) {
  if (self->e) return 1;
  raise_closed("engine");
  return 0;
}

static PyObject *Engine_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  (void)args;
  (void)kw;
  EngineObject *self = (EngineObject *)type->tp_alloc(type, 0);
  if (!self) return NULL;
  self->lock = PyThread_allocate_lock();
  if (!self->lock) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  return (PyObject *)self;
}

/* PyArg converter: None stays NULL, else PyUnicode_FSConverter. */
static int fs_or_none(PyObject *o, void *out) {
  if (o == Py_None) {
    *(PyObject **)out = NULL;
    return 1;
  }
  return PyUnicode_FSConverter(o, out);
}

/* Engine(db=None, threads=0, opencl=True, cache_dir=None, seed=0,
 *        calibration=True) */
static int Engine_init(EngineObject *self, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"db",   "threads",     "opencl", "cache_dir",
                           "seed", "calibration", NULL};
  PyObject *db = NULL, *cache = NULL;
  int threads = 0, opencl = 1, calibration = 1;
  unsigned long long seed = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O&ipO&Kp", kwlist, fs_or_none,
                                   &db, &threads, &opencl, fs_or_none, &cache,
                                   &seed, &calibration))
    return -1;
  if (self->e) {
    Py_XDECREF(db);
    Py_XDECREF(cache);
    raise_status(QS_EINVAL, "the engine is already open");
    return -1;
  }
  qs_engine_options o = {0};
  o.db_path = db ? PyBytes_AS_STRING(db) : NULL;
  o.cache_dir = cache ? PyBytes_AS_STRING(cache) : NULL;
  o.threads = threads;
  o.no_opencl = !opencl;
  o.no_calibration = !calibration;
  o.seed = (uint64_t)seed;
  qs_engine *e = NULL;
  int rc;
  /* Opening probes OpenCL devices and the store: no GIL needed. */
  PyThreadState *ts = PyEval_SaveThread();
  rc = qs_engine_open(&e, &o);
  PyEval_RestoreThread(ts);
  Py_XDECREF(db);
  Py_XDECREF(cache);
  if (rc != QS_OK && rc != QS_ECORRUPT) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s",
             e ? qs_engine_error(e) : qs_status_message(rc));
    qs_engine_close(e);
    raise_status(rc, msg);
    return -1;
  }
  /* QS_ECORRUPT: a usable engine that does not record (the file is left
   * as it is); Python shows it as a warning. */
  if (rc == QS_ECORRUPT && PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "%s",
                                            qs_engine_error(e)) < 0) {
    qs_engine_close(e);
    return -1;
  }
  self->e = e;
  return 0;
}

static PyObject *Engine_close(EngineObject *self, PyObject *noargs) {
  (void)noargs;
  /* Counted under the engine's lock, which a running call holds: a
   * stream opened (or a call begun) while this thread waited for the lock
   * is seen here, and nothing a call uses is freed under it. */
  engine_lock(self);
  if (self->streams > 0) {
    char msg[128];
    snprintf(msg, sizeof msg,
             "%zd eSRRF stream(s) or plan(s) still open on this engine: "
             "close them "
             "first",
             self->streams);
    engine_unlock(self);
    return raise_status(QS_EINVAL, msg);
  }
  qs_engine *e = self->e;
  self->e = NULL;
  /* Closing flushes pending timings to the store. */
  PyThreadState *ts = PyEval_SaveThread();
  qs_engine_close(e);
  PyEval_RestoreThread(ts);
  engine_unlock(self);
  Py_RETURN_NONE;
}

static void Engine_dealloc(EngineObject *self) {
  qs_engine_close(self->e);
  if (self->lock) PyThread_free_lock(self->lock);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ------------------------------------------------------- device arrays */

/* An image on an OpenCL device (quicksilver_image.h) held for Python: the
 * engine that made it is kept alive with it. Released under the engine's
 * lock (qs_image_free touches the engine's list), or alone once the engine
 * is closed (its buffer went with the engine). */
typedef struct {
  PyObject_HEAD EngineObject *eng;
  qs_image img;
} DevArrayObject;

static PyTypeObject DevArrayType;

/* Takes *img (a device image of eng) into a new DeviceArray; *img is
 * emptied, freed on failure. */
static PyObject *devarray_new(EngineObject *eng, qs_image *img) {
  DevArrayObject *d = PyObject_New(DevArrayObject, &DevArrayType);
  if (!d) {
    qs_image_free(img);
    return NULL;
  }
  Py_INCREF(eng);
  d->eng = eng;
  d->img = *img;
  memset(img, 0, sizeof *img);
  return (PyObject *)d;
}

static void devarray_release(DevArrayObject *self) {
  if (!self->img.owner_) return;
  if (self->eng && self->eng->e) {
    engine_lock(self->eng);
    qs_image_free(&self->img);
    engine_unlock(self->eng);
  } else {
    qs_image_free(&self->img);
  }
}

static void DevArray_dealloc(DevArrayObject *self) {
  devarray_release(self);
  Py_XDECREF(self->eng);
  PyObject_Free(self);
}

/* An output: a DeviceArray for a device image, else an ndarray. */
static PyObject *output_object(EngineObject *eng, qs_image *img) {
  if (!img->data && img->owner_) return devarray_new(eng, img);
  return image_to_array(img);
}

static PyObject *DevArray_pull(DevArrayObject *self, PyObject *noargs) {
  (void)noargs;
  if (!self->img.owner_) return raise_closed("device array");
  if (!engine_ready(self->eng)) return NULL;
  qs_image h;
  engine_lock(self->eng);
  int rc =
      self->eng->e ? qs_image_pull(self->eng->e, &self->img, &h) : QS_EINVAL;
  if (unlock_status(self->eng, rc) != QS_OK) return NULL;
  return image_to_array(&h);
}

/* __array__(dtype=None, copy=None): the pixels pulled (always a copy). */
static PyObject *DevArray_array(DevArrayObject *self, PyObject *args,
                                PyObject *kw) {
  static char *names[] = {"dtype", "copy", NULL};
  PyObject *dtype = Py_None, *copy = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO", names, &dtype, &copy))
    return NULL;
  if (copy == Py_False) {
    PyErr_SetString(PyExc_ValueError, "a DeviceArray's pixels are on the "
                                      "device: reading them is a copy");
    return NULL;
  }
  PyObject *a = DevArray_pull(self, NULL);
  if (!a || dtype == Py_None) return a;
  PyObject *b = PyObject_CallMethod(a, "astype", "O", dtype);
  Py_DECREF(a);
  return b;
}

static PyObject *DevArray_free(DevArrayObject *self, PyObject *noargs) {
  (void)noargs;
  devarray_release(self);
  Py_RETURN_NONE;
}

static PyObject *DevArray_get_shape(DevArrayObject *self, void *c) {
  (void)c;
  return Py_BuildValue("(nnn)", (Py_ssize_t)self->img.frames,
                       (Py_ssize_t)self->img.rows,
                       (Py_ssize_t)self->img.cols);
}

static PyObject *DevArray_get_dtype(DevArrayObject *self, void *c) {
  (void)self;
  (void)c;
  return (PyObject *)PyArray_DescrFromType(NPY_FLOAT32);
}

static PyObject *DevArray_get_device(DevArrayObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(qs_image_device(&self->img));
}

static PyMethodDef DevArray_methods[] = {
    {"pull", (PyCFunction)DevArray_pull, METH_NOARGS,
     "pull() -> numpy array: the pixels copied to the host"},
    {"__array__", (PyCFunction)(void (*)(void))DevArray_array,
     METH_VARARGS | METH_KEYWORDS, "the pixels pulled (numpy's protocol)"},
    {"free", (PyCFunction)DevArray_free, METH_NOARGS,
     "free(): releases the device buffer now"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef DevArray_getset[] = {
    {"shape", (getter)DevArray_get_shape, NULL, "(frames, rows, cols)", NULL},
    {"dtype", (getter)DevArray_get_dtype, NULL, "numpy.float32", NULL},
    {"device", (getter)DevArray_get_device, NULL,
     "the device's name; '' once freed or its engine closed", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject DevArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quicksilver._core.DeviceArray",
    .tp_basicsize = sizeof(DevArrayObject),
    .tp_dealloc = (destructor)DevArray_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "an image on an OpenCL device (Engine.push, or the outputs of "
              "a call on device inputs)",
    .tp_methods = DevArray_methods,
    .tp_getset = DevArray_getset,
};

/* push(array, device) -> DeviceArray: a C-contiguous float32 3-D array
 * copied to the device. */
static PyObject *Engine_push(EngineObject *self, PyObject *args) {
  PyObject *arr;
  const char *device = NULL;
  if (!PyArg_ParseTuple(args, "O!|z", &PyArray_Type, &arr, &device))
    return NULL;
  PyArrayObject *a = (PyArrayObject *)arr;
  if (PyArray_TYPE(a) != NPY_FLOAT32 || PyArray_NDIM(a) != 3 ||
      !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) ||
      !PyArray_ISNOTSWAPPED(a)) {
    PyErr_SetString(PyExc_TypeError, "push: a C-contiguous, aligned, native "
                                     "float32 3-D array");
    return NULL;
  }
  if (!engine_ready(self)) return NULL;
  const npy_intp *dm = PyArray_DIMS(a);
  qs_image host = qs_image_wrap(PyArray_DATA(a), (size_t)dm[0], (size_t)dm[1],
                                (size_t)dm[2]),
           dev;
  engine_lock(self);
  int rc = self->e ? qs_image_push(self->e, &host, device, &dev) : QS_EINVAL;
  if (unlock_status(self, rc) != QS_OK) return NULL;
  return devarray_new(self, &dev);
}

/* Wraps each input array; they must be float32, C-contiguous, aligned,
 * native byte order, 3-D (the Python layer converts), or DeviceArrays. */
static int inputs_wrap(PyObject *seq, qs_image *in, size_t *n, int shapes) {
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  if (len > MAX_SLOTS) {
    raise_status(QS_EINVAL, "too many inputs");
    return -1;
  }
  for (Py_ssize_t k = 0; k < len; k++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, k);
    /* an estimate needs shapes only: (frames, rows, cols), no pixels */
    Py_ssize_t f, r, c;
    if (shapes && PyTuple_Check(o) &&
        PyArg_ParseTuple(o, "nnn", &f, &r, &c) && f >= 0 && r >= 0 &&
        c >= 0) {
      in[k] = qs_image_wrap(NULL, (size_t)f, (size_t)r, (size_t)c);
      continue;
    }
    PyErr_Clear();
    if (PyObject_TypeCheck(o, &DevArrayType)) { /* the engine checks it */
      in[k] = ((DevArrayObject *)o)->img;
      continue;
    }
    if (!PyArray_Check(o)) {
      PyErr_Format(PyExc_TypeError, "input %zd is not a numpy array", k);
      return -1;
    }
    PyArrayObject *a = (PyArrayObject *)o;
    if (PyArray_TYPE(a) != NPY_FLOAT32 || PyArray_NDIM(a) != 3 ||
        !PyArray_IS_C_CONTIGUOUS(a) || !PyArray_ISALIGNED(a) ||
        !PyArray_ISNOTSWAPPED(a)) {
      PyErr_Format(PyExc_TypeError,
                   "input %zd must be a C-contiguous, aligned, native float32 "
                   "3-D array",
                   k);
      return -1;
    }
    const npy_intp *d = PyArray_DIMS(a);
    in[k] = qs_image_wrap(PyArray_DATA(a), (size_t)d[0], (size_t)d[1],
                          (size_t)d[2]);
  }
  *n = (size_t)len;
  return 0;
}

/* Parameters from a sequence of (name, value): str values are parsed by the
 * engine as text ("avg", "true"), bool/int/float are passed by value. The
 * names and texts point into the sequence's objects, which outlive the
 * call. */
static int params_build(PyObject *seq, qs_param *p, size_t max, size_t *n) {
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  if ((size_t)len > max) {
    raise_status(QS_EPARAM, "too many parameters");
    return -1;
  }
  for (Py_ssize_t k = 0; k < len; k++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, k), *name, *value;
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 ||
        !PyUnicode_Check(name = PyTuple_GET_ITEM(item, 0))) {
      PyErr_SetString(PyExc_TypeError, "parameters are (name, value) pairs");
      return -1;
    }
    value = PyTuple_GET_ITEM(item, 1);
    memset(&p[k], 0, sizeof p[k]);
    if (!(p[k].name = utf8_whole(name, "parameter name"))) return -1;
    if (PyUnicode_Check(value)) {
      if (!(p[k].text = utf8_whole(value, p[k].name))) return -1;
    } else {
      p[k].value = PyFloat_AsDouble(value);
      if (p[k].value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        char msg[160];
        snprintf(msg, sizeof msg,
                 "parameter %s: expected a number, bool or str, got %s",
                 p[k].name, Py_TYPE(value)->tp_name);
        raise_status(QS_EPARAM, msg);
        return -1;
      }
    }
  }
  *n = (size_t)len;
  return 0;
}

/* The inputs and parameters of one run, benchmark or estimate: the
 * sequences are held (they own the names, texts and buffers the images and
 * params point into) until call_end. */
typedef struct call_args {
  PyObject *in_seq, *p_seq;
  qs_image in[MAX_SLOTS];
  qs_param p[QS_MAX_PARAMS];
  size_t n_in, n_p;
} call_args;

/* Converts inputs and parameters and takes the engine's lock. -1 with a
 * Python error set (lock not held) on failure; then call_end still. */
static int call_begin(EngineObject *self, PyObject *in_obj, PyObject *p_obj,
                      call_args *a, int shapes) {
  a->n_in = a->n_p = 0;
  a->in_seq = PySequence_Fast(in_obj, "inputs must be a sequence");
  a->p_seq =
      a->in_seq ? PySequence_Fast(p_obj, "params must be a sequence") : NULL;
  if (!a->p_seq || inputs_wrap(a->in_seq, a->in, &a->n_in, shapes) < 0 ||
      params_build(a->p_seq, a->p, QS_MAX_PARAMS, &a->n_p) < 0 ||
      !engine_ready(self))
    return -1;
  engine_lock(self);
  if (!self->e) { /* closed by another thread while we waited */
    engine_unlock(self);
    engine_ready(self);
    return -1;
  }
  return 0;
}

static void call_end(call_args *a) {
  Py_XDECREF(a->in_seq);
  Py_XDECREF(a->p_seq);
}

/* A float that is None when negative (unknown). */
static PyObject *seconds_or_none(double s) {
  if (s < 0) Py_RETURN_NONE;
  return PyFloat_FromDouble(s);
}

static PyObject *report_dict(const qs_run_report *r) {
  PyObject *est = PyList_New(0);
  for (size_t k = 0; est && k < r->n_estimates && k < QS_MAX_ESTIMATES; k++) {
    const qs_run_estimate *x = &r->estimates[k];
    PyObject *s = seconds_or_none(x->seconds);
    PyObject *lo = s ? seconds_or_none(x->optimistic) : NULL;
    PyObject *d =
        lo ? Py_BuildValue("{s:s,s:N,s:s,s:i,s:N,s:s,s:d}", "impl", x->impl,
                           "seconds", s, "source", x->source, "runs",
                           x->runs, "optimistic", lo, "state", x->state,
                           "transfer_seconds", x->transfer_seconds)
           : NULL;
    if (!lo) Py_XDECREF(s);
    if (!d || PyList_Append(est, d) < 0) Py_CLEAR(est);
    Py_XDECREF(d);
  }
  if (!est) return NULL;
  return Py_BuildValue("{s:s,s:s,s:d,s:d,s:d,s:d,s:d,s:i,s:N,s:s,s:K,s:K,s:K,"
                       "s:K,s:d}",
                       "impl", r->impl, "reason", r->reason, "seconds",
                       r->seconds, "device_seconds", r->device_seconds,
                       "once_seconds", r->once_seconds, "calibration_seconds",
                       r->calibration_seconds, "calibration_once_seconds",
                       r->calibration_once_seconds, "fallbacks", r->fallbacks,
                       "estimates", est, "record_status",
                       qs_status_name(r->record_status), "bytes_up",
                       (unsigned long long)r->bytes_up, "bytes_down",
                       (unsigned long long)r->bytes_down, "bytes_pulled",
                       (unsigned long long)r->bytes_pulled, "bytes_pushed",
                       (unsigned long long)r->bytes_pushed, "load_seconds",
                       r->load_seconds);
}

/* ------------------------------------------------ progress and Ctrl-C */

/* A run, plan run or benchmark is made on a thread of its own while the
 * calling thread waits without the GIL and takes it back every WATCH_MS, and
 * at each progress report, to run the signal handlers (Ctrl-C raises
 * KeyboardInterrupt there: Python runs handlers on its main thread only)
 * and to call the Python progress callback. Either raising, or the
 * callback returning true, cancels the call through the engine's progress
 * hook (run_request.progress), which stops the running implementation at
 * its next check. The engine's threads never touch Python. The hook's
 * context is a slot that points to the call being watched (NULL between
 * calls): a plan keeps the hook it was opened with for all its runs. */
#define WATCH_MS 20

typedef struct watch {
  pthread_mutex_t m;
  pthread_cond_t cv;
  int (*body)(void *);
  void *arg;
  int rc;
  int finished; /* body returned */
  int cancel;   /* the caller asks the engine to stop */
  int fresh;    /* a report the caller has not passed on yet */
  uint64_t done, total;
} watch;

/* The engine's progress hook: keeps the report for the caller, returns
 * the caller's request to stop. */
static int watch_hook(void *ctx, uint64_t done, uint64_t total) {
  watch *w = ctx;
  pthread_mutex_lock(&w->m);
  w->done = done;
  w->total = total;
  w->fresh = 1;
  int cancel = w->cancel;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->m);
  return cancel;
}

/* The hook as run_request.progress, its context a watch_slot. */
typedef watch *watch_slot;
static int slot_hook(void *ctx, uint64_t done, uint64_t total) {
  watch *w = *(watch_slot *)ctx;
  return w ? watch_hook(w, done, total) : 0;
}

static void *watch_main(void *p) {
  watch *w = p;
  int rc = w->body(w->arg);
  pthread_mutex_lock(&w->m);
  w->rc = rc;
  w->finished = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->m);
  return NULL;
}

/* With the GIL: runs the signal handlers, then callback(done, total) when
 * a report is fresh. Returns 1 when the call must stop: an exception is
 * set (KeyboardInterrupt, the callback's) or the callback returned true. */
static int watch_check(PyObject *callback, int fresh, uint64_t done,
                       uint64_t total) {
  if (PyErr_CheckSignals() < 0) return 1;
  if (!fresh || !callback) return 0;
  PyObject *r = PyObject_CallFunction(callback, "KK", (unsigned long long)done,
                                      (unsigned long long)total);
  int stop = r ? PyObject_IsTrue(r) : 1; /* -1: its __bool__ raised */
  Py_XDECREF(r);
  return stop != 0;
}

/* Runs body(arg), an engine call whose progress hook is slot_hook with
 * `slot` as context, as the block above says; callback is NULL or None for
 * none. Called and returns with the GIL held. Returns body's status; a
 * Python exception is pending when one was raised during the call (the
 * call was cancelled, or had already completed). */
static int watch_call(int (*body)(void *), void *arg, watch_slot *slot,
                      PyObject *callback) {
  if (callback == Py_None) callback = NULL;
  watch w = {.body = body, .arg = arg};
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&w.m, NULL);
  pthread_cond_init(&w.cv, &ca);
  pthread_condattr_destroy(&ca);
  *slot = &w;
  pthread_attr_t ta;
  pthread_attr_init(&ta);
  pthread_attr_setstacksize(&ta, (size_t)8 << 20);
  pthread_t t;
  int stop = 0;
  PyThreadState *ts = PyEval_SaveThread();
  int started = pthread_create(&t, &ta, watch_main, &w) == 0;
  pthread_attr_destroy(&ta);
  if (!started) /* no thread: the call runs here, uninterruptible */
    watch_main(&w);
  pthread_mutex_lock(&w.m);
  for (;;) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += WATCH_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    while (!w.finished && !w.fresh &&
           pthread_cond_timedwait(&w.cv, &w.m, &until) == 0) {
    }
    int finished = w.finished, fresh = w.fresh;
    uint64_t done = w.done, total = w.total;
    w.fresh = 0;
    pthread_mutex_unlock(&w.m);
    if (!stop) {
      PyEval_RestoreThread(ts);
      stop = watch_check(callback, fresh, done, total);
      ts = PyEval_SaveThread();
      if (stop) {
        pthread_mutex_lock(&w.m);
        w.cancel = 1;
        pthread_mutex_unlock(&w.m);
      }
    }
    if (finished) break;
    pthread_mutex_lock(&w.m);
  }
  if (started) pthread_join(t, NULL);
  *slot = NULL;
  PyEval_RestoreThread(ts);
  pthread_cond_destroy(&w.cv);
  pthread_mutex_destroy(&w.m);
  return w.rc;
}

/* Releases the engine's lock after a watched call: a pending Python
 * exception (Ctrl-C, the progress callback's) wins over the status. */
static int watch_status(EngineObject *self, int rc) {
  if (!PyErr_Occurred()) return unlock_status(self, rc);
  engine_unlock(self);
  return rc == QS_OK ? QS_ECANCELLED : rc;
}

/* qs_method_run / qs_method_benchmark / qs_plan_run as watch_call bodies. */
typedef struct run_job {
  qs_engine *e;
  qs_plan *p;
  const char *method, *impls;
  const qs_run_request *rq;
  const qs_image *in;
  size_t n_in;
  qs_image *out;
  size_t n_out;
  qs_run_report *rep;
  int warmup, repeats;
  qs_bench_result *br;
} run_job;

static int run_body(void *p) {
  run_job *j = p;
  return qs_method_run(j->e, j->method, j->rq, j->out, j->n_out, j->rep);
}

static int plan_body(void *p) {
  run_job *j = p;
  return qs_plan_run(j->p, j->in, j->n_in, j->out, j->n_out, j->rep);
}

static int bench_body(void *p) {
  run_job *j = p;
  return qs_method_benchmark(j->e, j->method, j->rq, j->impls, j->warmup,
                             j->repeats, j->br);
}

/* The caller's outputs: a sequence of n C-contiguous, aligned, writeable
 * 3-D float32 ndarrays (the Python layer has checked them and says why
 * not; this guards the memory) wrapped into out; held until the call
 * returns. -1 with a Python error set. */
static int outputs_wrap(PyObject *seq, qs_image *out, size_t n) {
  if ((size_t)PySequence_Fast_GET_SIZE(seq) != n) {
    char msg[96];
    snprintf(msg, sizeof msg, "out: %zd arrays for %zu outputs",
             PySequence_Fast_GET_SIZE(seq), n);
    raise_status(QS_EINVAL, msg);
    return -1;
  }
  for (size_t k = 0; k < n; k++) {
    PyObject *o = PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)k);
    PyArrayObject *a = (PyArrayObject *)o;
    if (!PyArray_Check(o) || PyArray_TYPE(a) != NPY_FLOAT32 ||
        PyArray_NDIM(a) != 3 || !PyArray_IS_C_CONTIGUOUS(a) ||
        !PyArray_ISALIGNED(a) || !PyArray_ISWRITEABLE(a)) {
      char msg[120];
      snprintf(msg, sizeof msg, "out %zu: not a writeable C-contiguous 3-D "
                                "float32 ndarray",
               k);
      raise_status(QS_EINVAL, msg);
      return -1;
    }
    npy_intp *dims = PyArray_DIMS(a);
    out[k] = qs_image_wrap(PyArray_DATA(a), (size_t)dims[0], (size_t)dims[1],
                           (size_t)dims[2]);
  }
  return 0;
}

/* run(method, inputs, params, impl, progress, out) -> (outputs, report
 * dict); out (None: the engine allocates) a sequence of the caller's
 * ndarrays, written in place and returned as the outputs */
static PyObject *Engine_run(EngineObject *self, PyObject *args) {
  const char *method, *impl = NULL;
  PyObject *in_obj, *p_obj, *progress = NULL, *out_obj = Py_None;
  if (!PyArg_ParseTuple(args, "sOO|zOO", &method, &in_obj, &p_obj, &impl,
                        &progress, &out_obj))
    return NULL;
  PyObject *result = NULL, *given = NULL;
  call_args ca;
  qs_image out[MAX_SLOTS];
  memset(out, 0, sizeof out);
  if (out_obj != Py_None &&
      !(given = PySequence_Fast(out_obj, "out must be a sequence")))
    return NULL;
  if (call_begin(self, in_obj, p_obj, &ca, 0) < 0) goto done;
  const qs_method_desc *d = qs_method_find(self->e, method);
  size_t n_out = d ? d->n_outputs : 0;
  if (n_out > MAX_SLOTS) n_out = MAX_SLOTS;
  if (given && d && outputs_wrap(given, out, n_out) < 0) {
    engine_unlock(self);
    goto done;
  }
  qs_run_request rq = {.inputs = ca.in,
                       .n_inputs = ca.n_in,
                       .params = ca.p,
                       .n_params = ca.n_p,
                       .impl = impl,
                       .outputs_given = given && d};
  qs_run_report rep;
  memset(&rep, 0, sizeof rep);
  watch_slot slot = NULL;
  rq.progress = slot_hook;
  rq.progress_ctx = &slot;
  run_job j = {.e = self->e,
               .method = method,
               .rq = &rq,
               .out = out,
               .n_out = n_out,
               .rep = &rep};
  /* Ctrl-C (or a raising callback) cancels the run; one that comes too
   * late finds it complete and recorded: its outputs are dropped. */
  if (watch_status(self, watch_call(run_body, &j, &slot, progress)) != QS_OK)
    goto done;
  PyObject *outs = PyTuple_New((Py_ssize_t)n_out);
  for (size_t k = 0; outs && k < n_out; k++) {
    PyObject *o = rq.outputs_given
                      ? Py_NewRef(PySequence_Fast_GET_ITEM(given, k))
                      : output_object(self, &out[k]);
    if (!o)
      Py_CLEAR(outs);
    else
      PyTuple_SET_ITEM(outs, (Py_ssize_t)k, o);
  }
  PyObject *rd = outs ? report_dict(&rep) : NULL;
  if (rd)
    result = Py_BuildValue("(NN)", outs, rd);
  else
    Py_XDECREF(outs);
done:
  for (size_t k = 0; k < MAX_SLOTS; k++) /* those not handed to numpy (the
                                            caller's: wrapped, kept) */
    qs_image_free(&out[k]);
  call_end(&ca);
  Py_XDECREF(given);
  return result;
}

static PyObject *bench_item(const void *base, size_t k) {
  const qs_bench_entry *b = (const qs_bench_entry *)base + k;
  return Py_BuildValue("{s:s,s:s,s:i,s:d,s:d,s:d,s:d,s:d}", "impl", b->impl,
                       "status", qs_status_name(b->status), "runs", b->runs,
                       "min", b->min, "median", b->median, "fast_mean",
                       b->fast_mean, "once_seconds", b->once_seconds,
                       "max_rel_diff", b->max_rel_diff);
}

/* benchmark(method, inputs, params, impls, warmup, repeats, progress)
 * -> [dict]; progress counts runs (qs_method_benchmark) */
static PyObject *Engine_benchmark(EngineObject *self, PyObject *args) {
  const char *method, *impls = NULL;
  PyObject *in_obj, *p_obj, *progress = NULL;
  int warmup = 1, repeats = 5;
  if (!PyArg_ParseTuple(args, "sOO|ziiO", &method, &in_obj, &p_obj, &impls,
                        &warmup, &repeats, &progress))
    return NULL;
  PyObject *list = NULL;
  call_args ca;
  if (call_begin(self, in_obj, p_obj, &ca, 0) < 0) goto done;
  qs_run_request rq = {.inputs = ca.in,
                       .n_inputs = ca.n_in,
                       .params = ca.p,
                       .n_params = ca.n_p};
  qs_bench_result br;
  memset(&br, 0, sizeof br);
  watch_slot slot = NULL;
  rq.progress = slot_hook;
  rq.progress_ctx = &slot;
  run_job j = {.e = self->e,
               .method = method,
               .impls = impls,
               .rq = &rq,
               .warmup = warmup,
               .repeats = repeats,
               .br = &br};
  if (watch_status(self, watch_call(bench_body, &j, &slot, progress)) != QS_OK)
    goto done;
  list = list_of(br.n < QS_MAX_ESTIMATES ? br.n : QS_MAX_ESTIMATES, bench_item,
                 br.entries);
done:
  call_end(&ca);
  return list;
}

static PyObject *param_value(const qs_param_def *d, double v) {
  if (d->type == QS_PARAM_BOOL) return PyBool_FromLong(v != 0);
  if (d->type == QS_PARAM_INT) return PyLong_FromDouble(v);
  if (d->type == QS_PARAM_ENUM) {
    char buf[64];
    qs_params_format(d, v, buf, sizeof buf);
    return PyUnicode_FromString(buf);
  }
  return PyFloat_FromDouble(v);
}

/* [(name, doc), ...] of a method's input or output slots. */
static PyObject *slots_list(const qs_slot_def *s, size_t n) {
  PyObject *l = PyList_New(0);
  for (size_t k = 0; l && k < n; k++) {
    PyObject *t = Py_BuildValue("(ss)", s[k].name, s[k].doc ? s[k].doc : "");
    if (!t || PyList_Append(l, t) < 0) Py_CLEAR(l);
    Py_XDECREF(t);
  }
  return l;
}

static PyObject *params_list(const qs_method_desc *m) {
  PyObject *l = PyList_New(0);
  for (size_t k = 0; l && k < m->n_params; k++) {
    const qs_param_def *d = &m->params[k];
    int ranged = (d->type == QS_PARAM_INT || d->type == QS_PARAM_FLOAT) &&
                 d->min < d->max;
    PyObject *def = param_value(d, d->def);
    PyObject *lo = ranged ? PyFloat_FromDouble(d->min) : Py_NewRef(Py_None);
    PyObject *hi = ranged ? PyFloat_FromDouble(d->max) : Py_NewRef(Py_None);
    PyObject *x =
        (def && lo && hi)
            ? Py_BuildValue(
                  "{s:s,s:s,s:N,s:N,s:N,s:O,s:O,s:s,s:s}", "name", d->name,
                  "type", type_name(d->type), "default", def, "min", lo, "max",
                  hi, "min_open",
                  (d->flags & QS_PARAM_MIN_OPEN) ? Py_True : Py_False,
                  "max_open",
                  (d->flags & QS_PARAM_MAX_OPEN) ? Py_True : Py_False,
                  "choices", d->choices ? d->choices : "", "doc",
                  d->doc ? d->doc : "")
            : NULL;
    if (!x) {
      Py_XDECREF(def);
      Py_XDECREF(lo);
      Py_XDECREF(hi);
    }
    if (!x || PyList_Append(l, x) < 0) Py_CLEAR(l);
    Py_XDECREF(x);
  }
  return l;
}

/* methods() -> [dict]: name, doc, inputs, outputs, params, tolerance. */
static PyObject *Engine_methods(EngineObject *self, PyObject *noargs) {
  (void)noargs;
  if (!engine_ready(self)) return NULL;
  PyObject *l = PyList_New(0);
  size_t n = qs_method_count(self->e);
  for (size_t i = 0; l && i < n; i++) {
    const qs_method_desc *m = qs_method_at(self->e, i);
    PyObject *x = Py_BuildValue("{s:s,s:s,s:N,s:N,s:N,s:d}", "name", m->name,
                                "doc", m->doc ? m->doc : "", "inputs",
                                slots_list(m->inputs, m->n_inputs), "outputs",
                                slots_list(m->outputs, m->n_outputs), "params",
                                params_list(m), "tolerance", m->tolerance);
    if (!x || PyList_Append(l, x) < 0) Py_CLEAR(l);
    Py_XDECREF(x);
  }
  return l;
}

static PyObject *impl_item(const void *base, size_t k) {
  const qs_impl_info *i = (const qs_impl_info *)base + k;
  return Py_BuildValue("{s:s,s:s,s:i,s:O,s:s,s:s}", "name", i->name, "kind",
                       qs_impl_kind_name(i->kind), "version", i->version,
                       "available", i->available ? Py_True : Py_False, "why",
                       i->why, "device", i->device);
}

/* impls(method) -> [dict]: name, kind, version, available, why, device. */
static PyObject *Engine_impls(EngineObject *self, PyObject *args) {
  const char *method;
  if (!PyArg_ParseTuple(args, "s", &method) || !engine_ready(self))
    return NULL;
  qs_impl_info info[QS_MAX_IMPLS];
  size_t n = 0;
  engine_lock(self);
  int rc = self->e ? qs_method_impls(self->e, method, info, QS_MAX_IMPLS, &n)
                   : QS_EINVAL;
  if (unlock_status(self, rc) != QS_OK) return NULL;
  return list_of(n < QS_MAX_IMPLS ? n : QS_MAX_IMPLS, impl_item, info);
}

/* --------------------------------------------------------- devices */

static PyObject *device_item(const void *base, size_t k) {
  const qs_device_info *d = (const qs_device_info *)base + k;
  return Py_BuildValue(
      "{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:O,s:O,s:O,s:i,s:i,s:I,s:I,s:K,s:K,"
      "s:K,s:n,s:O}",
      "name", d->name, "fingerprint", d->fingerprint, "model", d->model,
      "platform", d->platform, "vendor", d->vendor, "driver", d->driver,
      "version", d->version, "opencl", d->opencl ? Py_True : Py_False, "gpu",
      d->gpu ? Py_True : Py_False, "shares_host_cores",
      d->shares_host_cores ? Py_True : Py_False, "cores", d->cores, "threads",
      d->threads, "compute_units", d->compute_units, "clock_mhz", d->clock_mhz,
      "global_mem", (unsigned long long)d->global_mem, "max_alloc",
      (unsigned long long)d->max_alloc, "local_mem",
      (unsigned long long)d->local_mem, "max_work_group",
      (Py_ssize_t)d->max_work_group, "fp64", d->fp64 ? Py_True : Py_False);
}

/* devices() -> [dict] from qs_engine_devices: the host CPU first, then each
 * OpenCL device. */
static PyObject *Engine_devices(EngineObject *self, PyObject *noargs) {
  (void)noargs;
  if (!engine_ready(self)) return NULL;
  qs_device_info dev[QS_MAX_IMPLS];
  size_t n = 0;
  engine_lock(self);
  int rc =
      self->e ? qs_engine_devices(self->e, dev, QS_MAX_IMPLS, &n) : QS_EINVAL;
  if (unlock_status(self, rc) != QS_OK) return NULL;
  return list_of(n < QS_MAX_IMPLS ? n : QS_MAX_IMPLS, device_item, dev);
}

static PyObject *Engine_get_opencl_why(EngineObject *self, void *c) {
  (void)c;
  if (!engine_ready(self)) return NULL;
  return PyUnicode_FromString(qs_engine_opencl_why(self->e));
}

/* estimate(method, inputs, params, impl) -> report dict: the choice
 * qs_method_run would make for these inputs, without running or recording. */
static PyObject *Engine_estimate(EngineObject *self, PyObject *args) {
  const char *method, *impl = NULL;
  PyObject *in_obj, *p_obj;
  if (!PyArg_ParseTuple(args, "sOO|z", &method, &in_obj, &p_obj, &impl))
    return NULL;
  PyObject *result = NULL;
  call_args ca;
  if (call_begin(self, in_obj, p_obj, &ca, 1) == 0) {
    qs_run_request rq = {.inputs = ca.in,
                         .n_inputs = ca.n_in,
                         .params = ca.p,
                         .n_params = ca.n_p,
                         .impl = impl};
    qs_run_report rep;
    memset(&rep, 0, sizeof rep);
    int rc = qs_method_estimate(self->e, method, &rq, &rep);
    if (unlock_status(self, rc) == QS_OK) result = report_dict(&rep);
  }
  call_end(&ca);
  return result;
}

/* ------------------------------------------------------ timing store */

/* Keyword filter of the db_* calls: method, impl, device, key, limit. The
 * strings point into the argument objects, alive for the call. */
static int filter_parse(PyObject *args, PyObject *kw, qs_db_filter *f) {
  static char *kwlist[] = {"method", "impl", "device", "key", "limit", NULL};
  memset(f, 0, sizeof *f);
  Py_ssize_t limit = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|zzzzn", kwlist, &f->method,
                                   &f->impl, &f->device, &f->key, &limit))
    return -1;
  if (limit < 0) {
    raise_status(QS_EINVAL, "limit must be >= 0");
    return -1;
  }
  f->limit = (size_t)limit;
  return 0;
}

/* Appends d to the list ctx; a nonzero return stops the walk (the Python
 * error is set). */
static int list_append_steal(PyObject *list, PyObject *d) {
  int bad = !d || PyList_Append(list, d) < 0;
  Py_XDECREF(d);
  return bad;
}

static int row_cb(void *ctx, const qs_db_row *r) {
  return list_append_steal(
      ctx, Py_BuildValue(
               "{s:L,s:d,s:s,s:s,s:i,s:s,s:s,s:d,s:s,s:d,s:d,s:d,s:s,"
               "s:s}",
               "id", (long long)r->id, "stamp", r->stamp, "method", r->method,
               "impl", r->impl, "impl_version", r->impl_version, "device",
               r->device, "key", r->key, "work", r->work, "params", r->params,
               "wall", r->wall, "device_seconds", r->device_seconds,
               "once_seconds", r->once_seconds, "status",
               qs_status_name(r->status), "error", r->error ? r->error : ""));
}

static int stat_cb(void *ctx, const qs_db_stat *s) {
  return list_append_steal(
      ctx, Py_BuildValue("{s:s,s:s,s:s,s:s,s:n,s:n,s:d,s:d,s:d,s:s}", "method",
                         s->method, "key", s->key, "impl", s->impl, "device",
                         s->device, "count", (Py_ssize_t)s->count, "failed",
                         (Py_ssize_t)s->failed, "min", s->min, "median",
                         s->median, "fast_mean", s->fast_mean, "status",
                         qs_status_name(s->status)));
}

static int best_cb(void *ctx, const char *method, const char *key,
                   const qs_run_report *choice) {
  PyObject *rd = report_dict(choice);
  return list_append_steal(
      ctx, rd ? Py_BuildValue("{s:s,s:s,s:N,s:O}", "method", method, "key",
                              key, "choice", rd, "slice",
                              qs_db_key_is_slice(key) ? Py_True : Py_False)
              : NULL);
}

/* Runs one of the db walks with a list as context; the GIL stays held (the
 * callbacks build Python objects). */
static PyObject *db_walk(EngineObject *self, PyObject *args, PyObject *kw,
                         int which) {
  qs_db_filter f;
  if (filter_parse(args, kw, &f) < 0 || !engine_ready(self)) return NULL;
  PyObject *list = PyList_New(0);
  if (!list) return NULL;
  engine_lock(self);
  int rc = QS_EINVAL;
  if (self->e) {
    if (which == 0)
      rc = qs_engine_db_query(self->e, &f, row_cb, list);
    else if (which == 1)
      rc = qs_engine_db_stats(self->e, &f, stat_cb, list);
    else
      rc = qs_engine_db_best(self->e, &f, best_cb, list);
  }
  if (PyErr_Occurred()) { /* a callback failed: its error stands */
    engine_unlock(self);
    Py_DECREF(list);
    return NULL;
  }
  if (unlock_status(self, rc) != QS_OK) Py_CLEAR(list);
  return list;
}

static PyObject *Engine_db_rows(EngineObject *self, PyObject *a, PyObject *k) {
  return db_walk(self, a, k, 0);
}
static PyObject *Engine_db_stats(EngineObject *self, PyObject *a,
                                 PyObject *k) {
  return db_walk(self, a, k, 1);
}
static PyObject *Engine_db_best(EngineObject *self, PyObject *a, PyObject *k) {
  return db_walk(self, a, k, 2);
}

/* The store calls without callbacks run without the GIL. op: 0 export,
 * 1 import, 2 prune, 3 forget, 4 check. */
typedef struct db_op {
  int op;
  const char *path;
  qs_db_filter f;
  size_t keep;
  double days;
  size_t n[3];
} db_op;

static PyObject *db_do(EngineObject *self, db_op *o) {
  if (!engine_ready(self)) return NULL;
  engine_lock(self);
  int rc = QS_EINVAL;
  qs_engine *e = self->e;
  PyThreadState *ts = PyEval_SaveThread();
  if (e) {
    switch (o->op) {
    case 0:
      rc = qs_engine_db_export(e, o->path);
      break;
    case 1:
      rc = qs_engine_db_import(e, o->path, &o->n[0], &o->n[1], &o->n[2]);
      break;
    case 2:
      rc = qs_engine_db_prune(e, o->keep, o->days, &o->n[0]);
      break;
    case 3:
      rc = qs_engine_db_forget(e, &o->f, &o->n[0]);
      break;
    default:
      rc = qs_engine_db_check(e);
      break;
    }
  }
  PyEval_RestoreThread(ts);
  if (unlock_status(self, rc) != QS_OK) return NULL;
  if (o->op == 1)
    return Py_BuildValue("(nnn)", (Py_ssize_t)o->n[0], (Py_ssize_t)o->n[1],
                         (Py_ssize_t)o->n[2]);
  if (o->op == 2 || o->op == 3) return PyLong_FromSize_t(o->n[0]);
  Py_RETURN_NONE;
}

static PyObject *db_path_op(EngineObject *self, PyObject *args, int op) {
  PyObject *path = NULL;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  db_op o = {.op = op, .path = PyBytes_AS_STRING(path)};
  PyObject *r = db_do(self, &o);
  Py_DECREF(path);
  return r;
}

static PyObject *Engine_db_export(EngineObject *self, PyObject *args) {
  return db_path_op(self, args, 0);
}
static PyObject *Engine_db_import(EngineObject *self, PyObject *args) {
  return db_path_op(self, args, 1);
}

static PyObject *Engine_db_prune(EngineObject *self, PyObject *args,
                                 PyObject *kw) {
  static char *kwlist[] = {"keep", "older_than_days", NULL};
  Py_ssize_t keep = 0;
  double days = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|nd", kwlist, &keep, &days))
    return NULL;
  if (keep < 0 || days != days) {
    return raise_status(QS_EINVAL,
                        "keep must be >= 0 and older_than_days a number");
  }
  db_op o = {.op = 2, .keep = (size_t)keep, .days = days};
  return db_do(self, &o);
}

static PyObject *Engine_db_forget(EngineObject *self, PyObject *args,
                                  PyObject *kw) {
  db_op o = {.op = 3};
  if (filter_parse(args, kw, &o.f) < 0) return NULL;
  return db_do(self, &o);
}

static PyObject *Engine_db_check(EngineObject *self, PyObject *noargs) {
  (void)noargs;
  db_op o = {.op = 4};
  return db_do(self, &o);
}

static PyObject *Engine_get_threads(EngineObject *self, void *c) {
  (void)c;
  if (!engine_ready(self)) return NULL;
  return PyLong_FromLong(qs_engine_threads(self->e));
}

static PyObject *Engine_get_db_path(EngineObject *self, void *c) {
  (void)c;
  if (!engine_ready(self)) return NULL;
  return PyUnicode_DecodeFSDefault(qs_engine_db_path(self->e));
}

/* (status name, message) of the recording of timings: ("ok", "") while
 * they are written, else why not (the store failed, is read-only...). */
static PyObject *Engine_get_record_status(EngineObject *self, void *c) {
  (void)c;
  if (!engine_ready(self)) return NULL;
  char msg[512] = "";
  int rc = qs_engine_record_status(self->e, msg, sizeof msg);
  return Py_BuildValue("(ss)", qs_status_name(rc), msg);
}

static PyObject *Engine_get_closed(EngineObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->e == NULL);
}

/* ------------------------------------------------------- live stream */

typedef struct {
  PyObject_HEAD EngineObject *eng; /* strong: the engine outlives us */
  qs_esrrf_stream *s;
} StreamObject;

static int stream_ready(StreamObject *self) {
  if (self->s) return 1;
  raise_closed("stream");
  return 0;
}

/* Takes the engine's lock for a stream call: 0 with the lock held and the
 * stream still open (another thread may have closed it while this one
 * waited), else -1 with ClosedError and the lock released. */
static int stream_lock(StreamObject *self) {
  engine_lock(self->eng);
  if (self->s) return 0;
  engine_unlock(self->eng);
  raise_closed("stream");
  return -1;
}

static void stream_close(StreamObject *self) {
  if (!self->s) return;
  engine_lock(self->eng);
  if (self->s) { /* not closed by another thread while we waited */
    qs_esrrf_stream_close(self->s);
    self->s = NULL;
    self->eng->streams--;
  }
  engine_unlock(self->eng);
}

static PyObject *Stream_close(StreamObject *self, PyObject *noargs) {
  (void)noargs;
  stream_close(self);
  Py_RETURN_NONE;
}

static void Stream_dealloc(StreamObject *self) {
  stream_close(self);
  Py_XDECREF(self->eng);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* push(frames): a C-contiguous float32 (F, R, C) array, wrapped as it is;
 * the GIL is released while the frames' maps are computed. */
static PyObject *Stream_push(StreamObject *self, PyObject *arr) {
  PyObject *one = PyTuple_Pack(1, arr);
  qs_image in[MAX_SLOTS];
  size_t n = 0;
  int bad = !one || inputs_wrap(one, in, &n, 0) < 0;
  if (bad || !stream_ready(self)) {
    Py_XDECREF(one);
    return NULL;
  }
  if (stream_lock(self) < 0) {
    Py_DECREF(one);
    return NULL;
  }
  PyThreadState *ts = PyEval_SaveThread();
  int rc = qs_esrrf_stream_push(self->s, &in[0]);
  char msg[1024] = "";
  if (rc != QS_OK)
    snprintf(msg, sizeof msg, "%s", qs_esrrf_stream_error(self->s));
  PyEval_RestoreThread(ts);
  engine_unlock(self->eng);
  Py_DECREF(one);
  if (rc != QS_OK) return raise_status(rc, msg);
  if (PyErr_CheckSignals() < 0) return NULL;
  Py_RETURN_NONE;
}

/* pop() -> None, or (image, index, first, frames, latency). */
static PyObject *Stream_pop(StreamObject *self, PyObject *noargs) {
  (void)noargs;
  if (!stream_ready(self)) return NULL;
  qs_image out = {0};
  qs_esrrf_stream_result info;
  int got = 0;
  if (stream_lock(self) < 0) return NULL;
  int rc = qs_esrrf_stream_pop(self->s, &out, &info, &got);
  char msg[1024] = "";
  if (rc != QS_OK)
    snprintf(msg, sizeof msg, "%s", qs_esrrf_stream_error(self->s));
  engine_unlock(self->eng);
  if (rc != QS_OK) {
    qs_image_free(&out);
    return raise_status(rc, msg);
  }
  if (!got) Py_RETURN_NONE;
  PyObject *a = image_to_array(&out);
  if (!a) return NULL;
  return Py_BuildValue("(NKKKd)", a, (unsigned long long)info.index,
                       (unsigned long long)info.first,
                       (unsigned long long)info.frames, info.latency);
}

static PyObject *Stream_end(StreamObject *self, PyObject *noargs) {
  (void)noargs;
  if (!stream_ready(self) || stream_lock(self) < 0) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  int rc = qs_esrrf_stream_end(self->s);
  char msg[1024] = "";
  if (rc != QS_OK)
    snprintf(msg, sizeof msg, "%s", qs_esrrf_stream_error(self->s));
  PyEval_RestoreThread(ts);
  engine_unlock(self->eng);
  if (rc != QS_OK) return raise_status(rc, msg);
  Py_RETURN_NONE;
}

static PyObject *Stream_get_frames(StreamObject *self, void *c) {
  (void)c;
  if (!stream_ready(self)) return NULL;
  return PyLong_FromUnsignedLongLong(qs_esrrf_stream_frames(self->s));
}

static PyObject *Stream_get_impl(StreamObject *self, void *c) {
  (void)c;
  if (!stream_ready(self)) return NULL;
  return PyUnicode_FromString(qs_esrrf_stream_impl(self->s));
}

static PyObject *Stream_get_closed(StreamObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->s == NULL);
}

static PyMethodDef Stream_methods_table[] = {
    {"push", (PyCFunction)Stream_push, METH_O, "push(frames)"},
    {"pop", (PyCFunction)Stream_pop, METH_NOARGS,
     "pop() -> None or (image, index, first, frames, latency)"},
    {"end", (PyCFunction)Stream_end, METH_NOARGS, "end() -- end of input"},
    {"close", (PyCFunction)Stream_close, METH_NOARGS, "close()"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Stream_getset[] = {
    {"frames", (getter)Stream_get_frames, NULL, "frames pushed", NULL},
    {"impl", (getter)Stream_get_impl, NULL, "implementation in use", NULL},
    {"closed", (getter)Stream_get_closed, NULL, "True once closed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject StreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quicksilver._core.Stream",
    .tp_basicsize = sizeof(StreamObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Low-level live eSRRF stream (use Engine.esrrf_stream).",
    .tp_dealloc = (destructor)Stream_dealloc,
    .tp_methods = Stream_methods_table,
    .tp_getset = Stream_getset,
};

/* ---------------------------------------------------------------- plans */

typedef struct {
  PyObject_HEAD EngineObject *eng; /* strong: the engine outlives us */
  qs_plan *p;
  size_t n_out;
  int given;        /* opened with outputs_given: runs take `out` */
  watch_slot *slot; /* the plan's progress context (watch_call) */
} PlanObject;

static int plan_ready(PlanObject *self) {
  if (self->p) return 1;
  raise_closed("plan");
  return 0;
}

static void plan_release(PlanObject *self) {
  if (!self->p) return;
  engine_lock(self->eng);
  if (self->p) { /* not closed by another thread while we waited */
    qs_plan_close(self->p);
    self->p = NULL;
    self->eng->streams--;
  }
  engine_unlock(self->eng);
}

static PyObject *Plan_close(PlanObject *self, PyObject *noargs) {
  (void)noargs;
  plan_release(self);
  Py_RETURN_NONE;
}

static void Plan_dealloc(PlanObject *self) {
  plan_release(self);
  PyMem_RawFree(self->slot);
  Py_XDECREF(self->eng);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* run(inputs, progress=None, out=None) -> (outputs tuple, report dict),
 * watched as Engine.run; out: the caller's ndarrays for a plan opened with
 * given outputs (required there, refused elsewhere), returned as the
 * outputs. */
static PyObject *Plan_run(PlanObject *self, PyObject *args) {
  PyObject *in_obj, *progress = NULL, *out_obj = Py_None;
  if (!PyArg_ParseTuple(args, "O|OO", &in_obj, &progress, &out_obj))
    return NULL;
  PyObject *seq = PySequence_Fast(in_obj, "inputs must be a sequence");
  PyObject *given = NULL;
  qs_image in[MAX_SLOTS], out[MAX_SLOTS];
  size_t n_in = 0;
  PyObject *result = NULL;
  memset(out, 0, sizeof out);
  if (!seq || inputs_wrap(seq, in, &n_in, 0) < 0 || !plan_ready(self))
    goto done;
  if ((out_obj != Py_None) != (self->given != 0)) {
    raise_status(QS_EINVAL, self->given
                                ? "out: this plan writes into given outputs "
                                  "(opened with given_outputs): pass out="
                                : "out: this plan allocates its outputs "
                                  "(open it with given_outputs=True)");
    goto done;
  }
  if (out_obj != Py_None &&
      (!(given = PySequence_Fast(out_obj, "out must be a sequence")) ||
       outputs_wrap(given, out, self->n_out) < 0))
    goto done;
  engine_lock(self->eng);
  if (!self->p) { /* closed by another thread while we waited */
    engine_unlock(self->eng);
    plan_ready(self);
    goto done;
  }
  qs_run_report rep;
  memset(&rep, 0, sizeof rep);
  run_job j = {.p = self->p,
               .in = in,
               .n_in = n_in,
               .out = out,
               .n_out = self->n_out,
               .rep = &rep};
  if (watch_status(self->eng,
                   watch_call(plan_body, &j, self->slot, progress)) != QS_OK)
    goto done;
  PyObject *outs = PyTuple_New((Py_ssize_t)self->n_out);
  for (size_t k = 0; outs && k < self->n_out; k++) {
    PyObject *o = given ? Py_NewRef(PySequence_Fast_GET_ITEM(given, k))
                        : output_object(self->eng, &out[k]);
    if (!o)
      Py_CLEAR(outs);
    else
      PyTuple_SET_ITEM(outs, (Py_ssize_t)k, o);
  }
  PyObject *rd = outs ? report_dict(&rep) : NULL;
  if (rd)
    result = Py_BuildValue("(NN)", outs, rd);
  else
    Py_XDECREF(outs);
done:
  for (size_t k = 0; k < MAX_SLOTS; k++)
    qs_image_free(&out[k]);
  Py_XDECREF(seq);
  Py_XDECREF(given);
  return result;
}

static PyObject *Plan_get_impl(PlanObject *self, void *c) {
  (void)c;
  return PyUnicode_FromString(self->p ? qs_plan_impl(self->p) : "");
}

static PyObject *Plan_get_closed(PlanObject *self, void *c) {
  (void)c;
  return PyBool_FromLong(self->p == NULL);
}

static PyMethodDef Plan_methods_table[] = {
    {"run", (PyCFunction)Plan_run, METH_VARARGS,
     "run(inputs, progress, out) -> (outputs, report)"},
    {"close", (PyCFunction)Plan_close, METH_NOARGS, "close()"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Plan_getset[] = {
    {"impl", (getter)Plan_get_impl, NULL, "the last run's implementation",
     NULL},
    {"closed", (getter)Plan_get_closed, NULL, "True once closed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quicksilver._core.Plan",
    .tp_basicsize = sizeof(PlanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a plan: qs_method_open's (quicksilver.h)",
    .tp_dealloc = (destructor)Plan_dealloc,
    .tp_methods = Plan_methods_table,
    .tp_getset = Plan_getset,
};

/* open(method, shapes, params, impl) -> Plan; shapes a sequence of
 * (frames, rows, cols). */
static PyObject *Engine_open(EngineObject *self, PyObject *args) {
  const char *method, *impl = NULL;
  PyObject *shapes, *p_obj;
  int given = 0;
  if (!PyArg_ParseTuple(args, "sOO|zp", &method, &shapes, &p_obj, &impl,
                        &given))
    return NULL;
  PyObject *sh = PySequence_Fast(shapes, "shapes must be a sequence");
  PyObject *p_seq =
      sh ? PySequence_Fast(p_obj, "params must be a sequence") : NULL;
  qs_image in[MAX_SLOTS];
  qs_param p[QS_MAX_PARAMS];
  size_t n_p = 0;
  PyObject *result = NULL;
  /* every run of the plan reports through this slot (watch_call) */
  watch_slot *slot = PyMem_RawCalloc(1, sizeof *slot);
  if (!slot) PyErr_NoMemory();
  if (!slot || !p_seq || params_build(p_seq, p, QS_MAX_PARAMS, &n_p) < 0 ||
      !engine_ready(self))
    goto done;
  Py_ssize_t n_in = PySequence_Fast_GET_SIZE(sh);
  if (n_in > MAX_SLOTS) {
    raise_status(QS_EINVAL, "too many inputs");
    goto done;
  }
  for (Py_ssize_t k = 0; k < n_in; k++) {
    Py_ssize_t f, r, c;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(sh, k), "nnn", &f, &r,
                          &c))
      goto done;
    if (f <= 0 || r <= 0 || c <= 0) {
      raise_status(QS_ESHAPE, "shapes must be positive (frames, rows, cols)");
      goto done;
    }
    in[k] =
        (qs_image){.frames = (size_t)f, .rows = (size_t)r, .cols = (size_t)c};
  }
  qs_run_request rq = {.inputs = in,
                       .n_inputs = (size_t)n_in,
                       .params = p,
                       .n_params = n_p,
                       .impl = impl,
                       .progress = slot_hook,
                       .progress_ctx = slot,
                       .outputs_given = given};
  engine_lock(self);
  if (!self->e) {
    engine_unlock(self);
    engine_ready(self);
    goto done;
  }
  qs_plan *pl = NULL;
  PyThreadState *ts = PyEval_SaveThread();
  int rc = qs_method_open(self->e, method, &rq, &pl);
  PyEval_RestoreThread(ts);
  const qs_method_desc *d = rc ? NULL : qs_method_find(self->e, method);
  /* counted before the lock goes: a close() waiting for it sees it */
  if (rc == QS_OK) self->streams++;
  if (unlock_status(self, rc) != QS_OK) goto done;
  PlanObject *po = PyObject_New(PlanObject, &PlanType);
  if (!po) {
    engine_lock(self);
    qs_plan_close(pl);
    self->streams--;
    engine_unlock(self);
    goto done;
  }
  Py_INCREF(self);
  po->eng = self;
  po->p = pl;
  po->n_out = d && d->n_outputs < MAX_SLOTS ? d->n_outputs : MAX_SLOTS;
  po->given = given;
  po->slot = slot;
  slot = NULL;
  result = (PyObject *)po;
done:
  PyMem_RawFree(slot);
  Py_XDECREF(sh);
  Py_XDECREF(p_seq);
  return result;
}

/* esrrf_stream(rows, cols, params, sliding, window, every, impl,
 *              max_pending) -> Stream */
static PyObject *Engine_esrrf_stream(EngineObject *self, PyObject *args) {
  Py_ssize_t rows, cols, window, every, max_pending;
  PyObject *p_obj;
  int sliding;
  const char *impl = NULL;
  if (!PyArg_ParseTuple(args, "nnOpnnzn", &rows, &cols, &p_obj, &sliding,
                        &window, &every, &impl, &max_pending))
    return NULL;
  if (rows < 0 || cols < 0 || window < 0 || every < 0 || max_pending < 0)
    return raise_status(QS_EINVAL, "stream sizes must be >= 0");
  PyObject *p_seq = PySequence_Fast(p_obj, "params must be a sequence");
  qs_param p[QS_MAX_PARAMS];
  size_t n_p = 0;
  if (!p_seq || params_build(p_seq, p, QS_MAX_PARAMS, &n_p) < 0 ||
      !engine_ready(self)) {
    Py_XDECREF(p_seq);
    return NULL;
  }
  qs_esrrf_stream_options o = {.rows = (size_t)rows,
                               .cols = (size_t)cols,
                               .params = p,
                               .n_params = n_p,
                               .sliding = sliding,
                               .window = (size_t)window,
                               .every = (size_t)every,
                               .impl = impl,
                               .max_pending = (size_t)max_pending};
  qs_esrrf_stream *st = NULL;
  char msg[1024] = "";
  StreamObject *so = PyObject_New(StreamObject, &StreamType);
  if (!so) {
    Py_DECREF(p_seq);
    return NULL;
  }
  so->eng = NULL;
  so->s = NULL;
  engine_lock(self);
  if (!self->e) { /* closed by another thread while we waited */
    engine_unlock(self);
    Py_DECREF(p_seq);
    Py_DECREF(so);
    return raise_closed("engine");
  }
  int rc = qs_esrrf_stream_open(self->e, &o, &st, msg, sizeof msg);
  /* counted before the lock goes: a close() waiting for it sees it */
  if (rc == QS_OK) self->streams++;
  engine_unlock(self);
  Py_DECREF(p_seq);
  if (rc != QS_OK) {
    Py_DECREF(so);
    return raise_status(rc, msg);
  }
  Py_INCREF(self);
  so->eng = self;
  so->s = st;
  return (PyObject *)so;
}


/* Doubles from a sequence of numbers into a new array (PyMem); NULL with
 * the error set. */
static double *doubles_of(PyObject *obj, const char *what, size_t *n) {
  PyObject *seq = PySequence_Fast(obj, what);
  if (!seq) return NULL;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  double *v = PyMem_Malloc((size_t)(len ? len : 1) * sizeof *v);
  if (!v) {
    Py_DECREF(seq);
    PyErr_NoMemory();
    return NULL;
  }
  for (Py_ssize_t k = 0; k < len; k++) {
    v[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, k));
    if (v[k] == -1 && PyErr_Occurred()) {
      Py_DECREF(seq);
      PyMem_Free(v);
      return NULL;
    }
  }
  Py_DECREF(seq);
  *n = (size_t)len;
  return v;
}

/* qs_esrrf_sweep as a watch_call body. */
typedef struct sweep_job {
  qs_engine *e;
  const qs_image *stack;
  const qs_esrrf_sweep_options *o;
  qs_esrrf_sweep_result *res;
  char *msg;
  size_t msg_len;
} sweep_job;

static int sweep_body(void *p) {
  sweep_job *j = p;
  return qs_esrrf_sweep(j->e, j->stack, j->o, j->res, j->msg, j->msg_len);
}

/* qs_esrrf_sweep(stack, radii, sensitivities, temporal, magnification, iw,
 * mpc, rsp, frc, keep_images, impl, progress) -> (points, passes): one
 * tuple per point in the result's order (temporal, sensitivity, radius,
 * rsp, rse, sigma, frc, qnr, image or None). Ctrl-C and the progress
 * callback cancel it as they cancel run. */
static PyObject *Engine_esrrf_sweep(EngineObject *self, PyObject *args) {
  PyObject *stack_obj, *r_obj, *s_obj, *t_obj, *progress = NULL;
  int mag, iw, mpc, rsp, frc, keep;
  const char *impl = NULL;
  if (!PyArg_ParseTuple(args, "OOOOippppp|zO", &stack_obj, &r_obj, &s_obj,
                        &t_obj, &mag, &iw, &mpc, &rsp, &frc, &keep, &impl,
                        &progress))
    return NULL;
  PyObject *one = PyTuple_Pack(1, stack_obj);
  qs_image st;
  size_t n_in = 0;
  if (!one) return NULL;
  int ok = inputs_wrap(one, &st, &n_in, 0) == 0;
  size_t nr = 0, ns = 0, nt = 0;
  double *radii = ok ? doubles_of(r_obj, "radii must be a sequence", &nr) : NULL;
  double *sens = radii ? doubles_of(s_obj, "sensitivities must be a sequence", &ns) : NULL;
  double *tv = sens ? doubles_of(t_obj, "temporal must be a sequence", &nt) : NULL;
  PyObject *result = NULL;
  if (!tv || !engine_ready(self)) goto done;
  int temporal[3] = {0};
  if (nt > 3) {
    raise_status(QS_EPARAM, "temporal: at most 3 statistics");
    goto done;
  }
  for (size_t k = 0; k < nt; k++) temporal[k] = (int)tv[k];
  qs_esrrf_sweep_options o = {.radii = radii,
                              .n_radii = nr,
                              .sensitivities = sens,
                              .n_sensitivities = ns,
                              .temporal = temporal,
                              .n_temporal = nt,
                              .magnification = mag,
                              .no_intensity_weighting = !iw,
                              .macro_pixel_correction = mpc,
                              .no_rsp = !rsp,
                              .no_frc = !frc,
                              .keep_images = keep,
                              .impl = impl};
  watch_slot slot = NULL;
  o.progress = slot_hook;
  o.progress_ctx = &slot;
  qs_esrrf_sweep_result res;
  char msg[1024] = "";
  sweep_job j = {.e = self->e,
                 .stack = &st,
                 .o = &o,
                 .res = &res,
                 .msg = msg,
                 .msg_len = sizeof msg};
  engine_lock(self);
  int rc = watch_call(sweep_body, &j, &slot, progress);
  engine_unlock(self);
  /* a pending exception (Ctrl-C, the callback's) wins over the status; one
   * that came too late finds the sweep done: its result is dropped */
  if (PyErr_Occurred()) {
    if (rc == QS_OK) qs_esrrf_sweep_free(&res);
    goto done;
  }
  if (rc != QS_OK) {
    raise_status(rc, msg);
    goto done;
  }
  PyObject *pts = PyList_New((Py_ssize_t)res.n_points);
  for (size_t i = 0; pts && i < res.n_points; i++) {
    qs_esrrf_sweep_point *p = &res.points[i];
    PyObject *img;
    if (p->recon.data) {
      img = image_to_array(&p->recon);
    } else {
      Py_INCREF(Py_None);
      img = Py_None;
    }
    PyObject *t = img ? Py_BuildValue("(idddddddN)", p->temporal,
                                      p->sensitivity, p->radius, p->rsp,
                                      p->rse, p->sigma, p->frc, p->qnr, img)
                      : NULL;
    if (!t)
      Py_CLEAR(pts);
    else
      PyList_SET_ITEM(pts, (Py_ssize_t)i, t);
  }
  size_t passes = res.passes;
  char ran[sizeof res.impl];
  memcpy(ran, res.impl, sizeof ran);
  qs_esrrf_sweep_free(&res);
  if (pts) result = Py_BuildValue("(Nns)", pts, (Py_ssize_t)passes, ran);
done:
  Py_DECREF(one);
  PyMem_Free(radii);
  PyMem_Free(sens);
  PyMem_Free(tv);
  return result;
}

static PyMethodDef Engine_methods_table[] = {
    {"close", (PyCFunction)Engine_close, METH_NOARGS,
     "close() -- flush timings and release the engine"},
    {"push", (PyCFunction)Engine_push, METH_VARARGS,
     "push(array, device=None) -> DeviceArray"},
    {"run", (PyCFunction)Engine_run, METH_VARARGS,
     "run(method, inputs, params, impl, progress) -> (outputs, report)"},
    {"esrrf_sweep", (PyCFunction)Engine_esrrf_sweep, METH_VARARGS,
     "esrrf_sweep(stack, radii, sensitivities, temporal, magnification, iw, "
     "mpc, rsp, frc, keep_images, impl, progress) -> (points, passes)"},
    {"benchmark", (PyCFunction)Engine_benchmark, METH_VARARGS,
     "benchmark(method, inputs, params, impls, warmup, repeats) -> list"},
    {"methods", (PyCFunction)Engine_methods, METH_NOARGS,
     "methods() -> list of method descriptions"},
    {"impls", (PyCFunction)Engine_impls, METH_VARARGS,
     "impls(method) -> list of implementations"},
    {"devices", (PyCFunction)Engine_devices, METH_NOARGS,
     "devices() -> list of device descriptions"},
    {"estimate", (PyCFunction)Engine_estimate, METH_VARARGS,
     "estimate(method, inputs, params, impl) -> report dict"},
    {"db_rows", (PyCFunction)(void (*)(void))Engine_db_rows,
     METH_VARARGS | METH_KEYWORDS,
     "db_rows(method, impl, device, key, limit)"},
    {"db_stats", (PyCFunction)(void (*)(void))Engine_db_stats,
     METH_VARARGS | METH_KEYWORDS, "db_stats(method, impl, device, key)"},
    {"db_best", (PyCFunction)(void (*)(void))Engine_db_best,
     METH_VARARGS | METH_KEYWORDS, "db_best(method, impl, device, key)"},
    {"db_export", (PyCFunction)Engine_db_export, METH_VARARGS,
     "db_export(path)"},
    {"db_import", (PyCFunction)Engine_db_import, METH_VARARGS,
     "db_import(path) -> (added, skipped, rejected)"},
    {"db_prune", (PyCFunction)(void (*)(void))Engine_db_prune,
     METH_VARARGS | METH_KEYWORDS, "db_prune(keep, older_than_days) -> n"},
    {"db_forget", (PyCFunction)(void (*)(void))Engine_db_forget,
     METH_VARARGS | METH_KEYWORDS,
     "db_forget(method, impl, device, key) -> n"},
    {"db_check", (PyCFunction)Engine_db_check, METH_NOARGS, "db_check()"},
    {"open", (PyCFunction)Engine_open, METH_VARARGS,
     "open(method, shapes, params, impl) -> Plan"},
    {"esrrf_stream", (PyCFunction)Engine_esrrf_stream, METH_VARARGS,
     "esrrf_stream(rows, cols, params, sliding, window, every, impl, "
     "max_pending) -> Stream"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Engine_getset[] = {
    {"threads", (getter)Engine_get_threads, NULL, "pool threads", NULL},
    {"db_path", (getter)Engine_get_db_path, NULL, "timing store path", NULL},
    {"closed", (getter)Engine_get_closed, NULL, "True once closed", NULL},
    {"record_status", (getter)Engine_get_record_status, NULL,
     "(status name, message) of the recording of timings", NULL},
    {"opencl_why", (getter)Engine_get_opencl_why, NULL,
     "why there is no OpenCL device (\"\" when there is one)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "quicksilver._core.Engine",
    .tp_basicsize = sizeof(EngineObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Low-level engine handle (use quicksilver.Engine).",
    .tp_new = Engine_new,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods_table,
    .tp_getset = Engine_getset,
};

static PyMethodDef module_methods[] = {
    {"_set_errors", set_errors, METH_O,
     "_set_errors(map) -- status code -> exception class"},
    {"statuses", statuses, METH_NOARGS,
     "statuses() -> [(code, name, message)] of every status"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    "quicksilver._core",
    "quicksilver's compiled core (see the quicksilver package).",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__core(void) {
  import_array();
  if (PyType_Ready(&EngineType) < 0 || PyType_Ready(&StreamType) < 0 ||
      PyType_Ready(&PlanType) < 0 || PyType_Ready(&DevArrayType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&core_module);
  if (!m) return NULL;
  if (PyModule_AddObjectRef(m, "Engine", (PyObject *)&EngineType) < 0 ||
      PyModule_AddObjectRef(m, "DeviceArray", (PyObject *)&DevArrayType) <
          0 ||
      PyModule_AddStringConstant(m, "VERSION", QS_VERSION) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
