/* pp_assert.h — PP_ASSERT(cond): a structural invariant, checked in Debug
 * and sanitizer builds (CMake defines PP_ASSERTS there) and compiled to
 * nothing otherwise (the condition still type-checked, never evaluated).
 * A failure writes "file:line: invariant failed: cond" to stderr and
 * aborts. The report uses write(2) alone, so an assertion may sit on a path
 * a signal handler reaches (the recorder's drain at a crash). */
#ifndef PP_ASSERT_H
#define PP_ASSERT_H

#ifdef PP_ASSERTS
void pp_assert_fail(const char *file, int line, const char *cond) __attribute__((noreturn, cold));
#define PP_ASSERT(cond) ((cond) ? (void)0 : pp_assert_fail(__FILE__, __LINE__, #cond))
#else
#define PP_ASSERT(cond) ((void)sizeof(!(cond)))
#endif

#endif
