/* Fallback for <EGL/eglext.h> where the EGL headers are not installed (added
 * with -idirafter: a real header always wins). Only the handle types the
 * CUDA EGL-interop headers use; in EGL they are all opaque pointers. */
#ifndef A2ASIM_FALLBACK_EGLEXT_H
#define A2ASIM_FALLBACK_EGLEXT_H
typedef void *EGLImageKHR;
typedef void *EGLStreamKHR;
typedef void *EGLSyncKHR;
#endif
