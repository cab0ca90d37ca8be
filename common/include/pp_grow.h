/* pp_grow.h — the one way to append to a malloc'd array.
 *
 *   item *v = NULL; int n = 0, cap = 0;
 *   if (PP_GROW(v, n + 1, cap) != 0) goto oom;
 *   v[n++] = x;
 *
 * Makes room for at least `need` elements, doubling (from 16), so appends
 * cost O(1) amortised. Evaluates to 0, or -1 with v and cap unchanged
 * (out of memory or size overflow). cap may be any integer type. */
#ifndef PP_GROW_H
#define PP_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pp_assert.h"

/* New capacity for `need` elements of `size` bytes, or 0 on overflow. */
static inline size_t pp_grow_cap(size_t cap, size_t need, size_t size)
{
	size_t c = cap ? cap : 16;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return 0;
		c *= 2;
	}
	return c > SIZE_MAX / size || c > INT32_MAX ? 0 : c;
}

#define PP_GROW(v, need, cap)                                                                \
	__extension__({                                                                      \
		int r_ = 0;                                                                  \
		if ((size_t)(need) > (size_t)(cap)) {                                        \
			size_t c_ = pp_grow_cap((size_t)(cap), (size_t)(need), sizeof *(v)); \
			void *p_ = c_ ? realloc((v), c_ * sizeof *(v)) : NULL;               \
			if (p_) {                                                            \
				(v) = p_;                                                    \
				(cap) = c_;                                                  \
			} else {                                                             \
				r_ = -1;                                                     \
			}                                                                    \
		}                                                                            \
		PP_ASSERT(r_ != 0 || (size_t)(cap) >= (size_t)(need));                       \
		r_;                                                                          \
	})

#endif
