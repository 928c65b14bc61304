/*
 * quicksilver_image.h — images that live on an OpenCL device.
 *
 * A device image is an `image` whose pixels are a buffer on one of the
 * engine's OpenCL devices: its data is NULL, its frames, rows and cols are
 * its shape, and its private owner_ holds the buffer. It is made by
 * qs_image_push (a host image copied up) or by qs_method_run / qs_plan_run (outputs
 * of a call whose inputs live on a device), read back by qs_image_pull and
 * released by qs_image_free, like any owned image. A part of quicksilver.h
 * (which includes it): programs include quicksilver.h.
 *
 * Calls take device images wherever they take images:
 *  - Outputs live where the inputs live: a call with an input on a device
 *    gives device images on that device; inputs on two devices are
 *    refused (QS_EINVAL naming the input).
 *  - An OpenCL implementation of that device that declares it reads device
 *    images (impl_def.device_images; roberts_cross, shift_magnify and rgc
 *    do) receives the buffers themselves: nothing is copied.
 *  - Any other implementation (serial, threaded, eSRRF's OpenCL chain, an
 *    OpenCL implementation of another device) receives host memory: the
 *    engine pulls the device inputs once per call (kept across fallbacks
 *    and calibration) and pushes its outputs back to the inputs' device;
 *    run_report.bytes_pulled and bytes_pushed say so. A device image of
 *    another device than the implementation's is thus moved, never
 *    refused, and the report shows the bytes.
 *  - The agent adds to each implementation's estimate the seconds those
 *    moves would take (bytes at the device's measured bandwidth:
 *    qs_engine_device_bandwidth), shown apart in run_estimate.transfer_seconds.
 *    A run on the device images themselves is recorded under the call's
 *    key followed by "@device": it has no transfers, unlike the same
 *    implementation's runs on host images, and is learnt apart.
 *  - Shape rules see no pixels of a device input (its data is NULL), as in
 *    qs_method_estimate; a method with finite_inputs (eSRRF) has them
 *    scanned on the device and refused as a host NaN or infinity is.
 *  - qs_method_benchmark pulls device inputs once and runs on host memory.
 *
 * A device image belongs to the engine that made it. Passing one to
 * another engine, or a copy of one already freed while its engine is open,
 * gives QS_EINVAL ("freed, or of another engine"); nothing is read from
 * it. The engine keeps the records of its last 256 freed device images,
 * so a copy of one of them is told apart for sure and freeing it again
 * does nothing; beyond that (or after qs_engine_close) a copy of a freed
 * image is a dangling pointer, as a host image's would be.
 * qs_engine_close releases the buffers of the device images still alive:
 * they then only answer qs_image_free (and qs_image_device, "").
 */
#ifndef QUICKSILVER_IMAGE_H
#define QUICKSILVER_IMAGE_H

/* A part of quicksilver.h, which includes it after its own types. */
#ifndef QUICKSILVER_H
#error "include quicksilver.h, not quicksilver_image.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Copies a host image to `device` (its name as qs_engine_devices gives it,
 * "<slug>", or "opencl:<slug>"; NULL or "opencl": the first OpenCL
 * device) into *dev, a device image to release with qs_image_free. On
 * failure *dev is emptied and the status is QS_EINVAL (NULL or empty
 * image, a host image that is itself a device image), QS_ENOIMPL (no such
 * device), QS_EUNAVAIL (no OpenCL device), QS_EDEVMEM or QS_ECL. */
QS_API int qs_image_push(qs_engine *e, const qs_image *host,
                         const char *device, qs_image *dev);

/* Copies a device image of this engine into *host, an image allocated by
 * the engine (qs_image_free). A host image is copied too. On failure *host
 * is emptied: QS_EINVAL for a freed or foreign device image. */
QS_API int qs_image_pull(qs_engine *e, const qs_image *dev, qs_image *host);

/* "" for a host image (or NULL); the device's name ("<slug>") for a
 * device image; "" too once its engine was closed. */
QS_API const char *qs_image_device(const qs_image *img);

/* Bytes moved host→device (up) and device→host (down) on `device` (as in
 * qs_image_push) since the engine opened: pushes, pulls and every
 * implementation's transfers. Either pointer may be NULL. */
QS_API int qs_engine_device_bytes(qs_engine *e, const char *device,
                                  uint64_t *up, uint64_t *down);

/* Bytes per second between host and `device`, as measured by this
 * engine's pushes and pulls (a first estimate from a 4 MiB probe when
 * none was made yet); what the agent prices transfers at. */
QS_API int qs_engine_device_bandwidth(qs_engine *e, const char *device,
                                      double *bytes_per_second);

#ifdef __cplusplus
}
#endif

#endif /* QUICKSILVER_IMAGE_H */
