/* Fallback for <vdpau/vdpau.h> where the VDPAU headers are not installed
 * (added with -idirafter: a real header always wins). Only the types the
 * CUDA VDPAU-interop headers use, with the VDPAU ABI: handles are 32-bit
 * unsigned integers, VdpStatus is an enumeration (int-sized), and
 * VdpGetProcAddress is a function type. */
#ifndef A2ASIM_FALLBACK_VDPAU_H
#define A2ASIM_FALLBACK_VDPAU_H
#include <stdint.h>
typedef uint32_t VdpDevice;
typedef uint32_t VdpFuncId;
typedef uint32_t VdpVideoSurface;
typedef uint32_t VdpOutputSurface;
typedef int VdpStatus;
typedef VdpStatus VdpGetProcAddress(VdpDevice device, VdpFuncId function_id, void **function_pointer);
#endif
