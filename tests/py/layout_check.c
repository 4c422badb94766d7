/* layout_check.c - the CPython layouts of shim/rt_pyframe.c against the
 * headers of a real interpreter: compiled once per installed CPython
 * (tests/py/CMakeLists.txt) with -DPYV=<minor> and that interpreter's include
 * directory, it compares every offset a2acheck reads with offsetof() from the
 * interpreter's own (internal) headers. For 3.13 it checks the positions of
 * the _Py_DebugOffsets fields that a2acheck reads instead. Exit 0 when all
 * match; prints each mismatch. */
#if PYV >= 11
#define Py_BUILD_CORE 1
#endif
#include <Python.h>
#include <frameobject.h>
#if PYV >= 11
#include "internal/pycore_frame.h"
#endif
#if PYV == 13
#include "internal/pycore_runtime.h"
#endif
#include <stddef.h>
#include <stdio.h>

#include "../../shim/rt_pyframe.c"

static int bad;

#define EQ(ours, theirs)                                                               \
  do {                                                                                 \
    long o_ = (long)(ours), t_ = (long)(theirs);                                       \
    if (o_ != t_) {                                                                    \
      printf("3.%d: %s = %ld, the headers say %s = %ld\n", PYV, #ours, o_, #theirs, t_); \
      bad = 1;                                                                         \
    }                                                                                  \
  } while (0)

int main(void) {
  printf("checking the layout of CPython %s (PYV=%d)\n", PY_VERSION, PYV);
  EQ(PY_MAJOR_VERSION, 3);
  EQ(PY_MINOR_VERSION, PYV);
#if PYV <= 12
  a2a_rt_py_layout L;
  if (!a2a_rt_py_layout_builtin(PYV, &L)) {
    printf("3.%d: no built-in layout\n", PYV);
    return 1;
  }
  EQ(L.ob_type, offsetof(PyObject, ob_type));
  EQ(L.str_length, offsetof(PyASCIIObject, length));
  EQ(L.str_state, offsetof(PyASCIIObject, state));
  EQ(L.str_ascii_size, sizeof(PyASCIIObject));
  EQ(L.str_compact_size, sizeof(PyCompactUnicodeObject));
  EQ(L.co_filename, offsetof(PyCodeObject, co_filename));
  EQ(L.co_name, offsetof(PyCodeObject, co_name));
  EQ(L.co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
#if PYV <= 10
  EQ(L.frame_objects, 1);
  EQ(L.ts_frame, offsetof(PyThreadState, frame));
  EQ(L.cframe_current, -1);
  EQ(L.fr_back, offsetof(PyFrameObject, f_back));
  EQ(L.fr_code, offsetof(PyFrameObject, f_code));
  EQ(L.fr_instr, offsetof(PyFrameObject, f_lasti));
  EQ(sizeof(((PyFrameObject *)0)->f_lasti), sizeof(int));
#else
  EQ(L.frame_objects, 0);
  EQ(L.ts_frame, offsetof(PyThreadState, cframe));
  EQ(L.cframe_current, offsetof(_PyCFrame, current_frame));
  EQ(L.fr_back, offsetof(_PyInterpreterFrame, previous));
  EQ(L.fr_code, offsetof(_PyInterpreterFrame, f_code));
  EQ(L.fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
  EQ(L.fr_owner, offsetof(_PyInterpreterFrame, owner));
  EQ(L.co_qualname, offsetof(PyCodeObject, co_qualname));
  EQ(L.co_code, offsetof(PyCodeObject, co_code_adaptive));
  EQ(sizeof(_Py_CODEUNIT), 2);
#if PYV == 12
  EQ(L.owner_cstack, FRAME_OWNED_BY_CSTACK);
#else
  EQ(L.owner_cstack, -1);
#endif
#endif
#elif PYV == 13
  EQ(DBG_VERSION, offsetof(_Py_DebugOffsets, version));
  EQ(DBG_FREE_THREADED, offsetof(_Py_DebugOffsets, free_threaded));
  EQ(DBG_TS_CURRENT_FRAME, offsetof(_Py_DebugOffsets, thread_state.current_frame));
  EQ(DBG_FR_PREVIOUS, offsetof(_Py_DebugOffsets, interpreter_frame.previous));
  EQ(DBG_FR_EXECUTABLE, offsetof(_Py_DebugOffsets, interpreter_frame.executable));
  EQ(DBG_FR_INSTR_PTR, offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr));
  EQ(DBG_FR_OWNER, offsetof(_Py_DebugOffsets, interpreter_frame.owner));
  EQ(DBG_CO_FILENAME, offsetof(_Py_DebugOffsets, code_object.filename));
  EQ(DBG_CO_NAME, offsetof(_Py_DebugOffsets, code_object.name));
  EQ(DBG_CO_QUALNAME, offsetof(_Py_DebugOffsets, code_object.qualname));
  EQ(DBG_CO_FIRSTLINENO, offsetof(_Py_DebugOffsets, code_object.firstlineno));
  EQ(DBG_CO_CODE_ADAPTIVE, offsetof(_Py_DebugOffsets, code_object.co_code_adaptive));
  EQ(DBG_OB_TYPE, offsetof(_Py_DebugOffsets, pyobject.ob_type));
  EQ(DBG_STR_STATE, offsetof(_Py_DebugOffsets, unicode_object.state));
  EQ(DBG_STR_LENGTH, offsetof(_Py_DebugOffsets, unicode_object.length));
  EQ(DBG_STR_ASCII_SIZE, offsetof(_Py_DebugOffsets, unicode_object.asciiobject_size));
  EQ(DBG_END, sizeof(_Py_DebugOffsets));
  /* What the runtime derives besides the table. */
  EQ(sizeof(PyASCIIObject) + 16, sizeof(PyCompactUnicodeObject));
  EQ(FRAME_OWNED_BY_CSTACK, 3);
  EQ(sizeof(_Py_CODEUNIT), 2);
#else
  printf("3.%d: a2acheck has no layout for this version (expected: no Python frames)\n", PYV);
#endif
  /* PEP 393 state bits: kind 2..4, compact 5, ascii 6 (rt_python.c). */
  {
    PyASCIIObject o;
    memset(&o, 0, sizeof o);
    o.state.kind = 4;
    o.state.compact = 1;
    o.state.ascii = 1;
    uint32_t w;
    memcpy(&w, (char *)&o + offsetof(PyASCIIObject, state), 4);
    EQ((w >> 2) & 7, 4);
    EQ((w >> 5) & 1, 1);
    EQ((w >> 6) & 1, 1);
  }
  puts(bad ? "FAIL" : "OK");
  return bad;
}
