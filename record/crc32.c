/*
 * crc32.c — zlib's CRC-32 (the spool's chunk checksum), folded with
 * carry-less multiplies where the CPU has them.
 *
 * The spool writer checksums every event it writes: with zlib's table
 * code that is ~4 ns per 24-byte event, as much again as the writer's
 * copy into the page cache, taken from the recording threads on a busy
 * machine. Folding 64 bytes per step with PCLMULQDQ (Intel's white paper
 * "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ") makes
 * it a few percent of that. The result is bit-for-bit zlib's crc32().
 */
#include "recorder_internal.h"

#include <zlib.h>

#if defined(__x86_64__)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#else
#include <cpuid.h>
#endif
#include <immintrin.h>

/* Constants for the bit-reflected polynomial 0xEDB88320: x^(k) mod P for
 * the fold distances (4 x 128 and 128 bits, +-32), the 64 -> 32 step, and
 * P with its Barrett quotient. */
#define CLMUL __attribute__((target("pclmul,sse4.1")))

CLMUL static __m128i fold(__m128i x, __m128i k, __m128i data)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
					   _mm_clmulepi64_si128(x, k, 0x11)),
			     data);
}

/* crc: the running (non-inverted) register; len >= 64, a multiple of 16 */
CLMUL static uint32_t crc_fold(uint32_t crc, const unsigned char *p, size_t len)
{
	const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
	const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
	const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
	const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);
	const __m128i mask32 = _mm_setr_epi32(-1, 0, -1, 0);

	__m128i x1 = _mm_loadu_si128((const __m128i *)p);
	__m128i x2 = _mm_loadu_si128((const __m128i *)(p + 16));
	__m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32));
	__m128i x4 = _mm_loadu_si128((const __m128i *)(p + 48));
	x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
	p += 64;
	len -= 64;
	while (len >= 64) {
		x1 = fold(x1, k1k2, _mm_loadu_si128((const __m128i *)p));
		x2 = fold(x2, k1k2, _mm_loadu_si128((const __m128i *)(p + 16)));
		x3 = fold(x3, k1k2, _mm_loadu_si128((const __m128i *)(p + 32)));
		x4 = fold(x4, k1k2, _mm_loadu_si128((const __m128i *)(p + 48)));
		p += 64;
		len -= 64;
	}
	/* four lanes into one, then the remaining 16-byte blocks */
	x1 = fold(x1, k3k4, x2);
	x1 = fold(x1, k3k4, x3);
	x1 = fold(x1, k3k4, x4);
	for (; len >= 16; p += 16, len -= 16)
		x1 = fold(x1, k3k4, _mm_loadu_si128((const __m128i *)p));

	/* 128 -> 64 bits */
	x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
	x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
	x2 = _mm_srli_si128(x1, 4);
	x1 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	/* Barrett reduction to 32 bits */
	x2 = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly, 0x10);
	x2 = _mm_clmulepi64_si128(_mm_and_si128(x2, mask32), poly, 0x00);
	x1 = _mm_xor_si128(x1, x2);
	return (uint32_t)_mm_extract_epi32(x1, 1);
}

static int have_clmul(void)
{
	static int known = -1;
	int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (k < 0) {
#if __has_include(<sys/platform/x86.h>)
		/* the loader's copy of cpuid: cpuid traps in a VM (~20 us) */
		k = CPU_FEATURE_ACTIVE(PCLMULQDQ) && CPU_FEATURE_ACTIVE(SSE4_1);
#else
		unsigned a, b, c, d;
		k = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_PCLMUL) && (c & bit_SSE4_1);
#endif
		__atomic_store_n(&known, k, __ATOMIC_RELAXED);
	}
	return k;
}
#endif

uint32_t pp_crc32(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
#if defined(__x86_64__)
	if (len >= 64 && have_clmul()) {
		size_t n = len & ~(size_t)15;
		crc = ~crc_fold(~crc, p, n);
		p += n;
		len -= n;
	}
#endif
	return len ? (uint32_t)crc32(crc, p, (uInt)len) : crc;
}
