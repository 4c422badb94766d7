/* Fallback for <EGL/egl.h> where the EGL headers are not installed (added
 * with -idirafter: a real header always wins). Only the type the CUDA
 * EGL-interop headers use, with the EGL ABI (EGLint is a 32-bit signed
 * integer). */
#ifndef A2ASIM_FALLBACK_EGL_H
#define A2ASIM_FALLBACK_EGL_H
#include <stdint.h>
typedef int32_t EGLint;
#endif
