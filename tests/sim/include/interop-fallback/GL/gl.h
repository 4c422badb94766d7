/* Fallback for <GL/gl.h>, used only where the OpenGL headers are not
 * installed (the simulator's build adds this directory with -idirafter, so a
 * real header always wins). It declares just the two types the CUDA
 * OpenGL-interop headers use, with the OpenGL ABI (both are 32-bit unsigned
 * integers), so that the simulator's GL-interop entry points are defined
 * against NVIDIA's own prototypes. */
#ifndef A2ASIM_FALLBACK_GL_H
#define A2ASIM_FALLBACK_GL_H
typedef unsigned int GLuint;
typedef unsigned int GLenum;
#endif
