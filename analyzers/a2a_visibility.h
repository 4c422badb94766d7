/* a2a_visibility.h - A2A_HIDDEN, for the declarations of the variables
 * that the library's files share (their headers' `extern`s).
 *
 * Every file of liba2acheck.so is compiled with -fvisibility=hidden, which
 * hides what a file defines but not what it declares: a variable defined
 * in another file is addressed as if another object could define it, by a
 * load of its address from the GOT, which the linker can only turn into an
 * address computation (a `lea`) before the load. Declared hidden, it is
 * addressed directly: one instruction less per use, on the hot paths of
 * every intercepted call (the runtime's state, the dispatch tables, the
 * activity lines, the real-function slots). Nothing else changes: the
 * definitions were hidden already, and no other object refers to these
 * names (unit tests link the same files into one executable). */
#ifndef A2A_VISIBILITY_H
#define A2A_VISIBILITY_H

#define A2A_HIDDEN __attribute__((visibility("hidden")))

#endif /* A2A_VISIBILITY_H */
