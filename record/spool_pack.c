/*
 * spool_pack.c — the compact form of a thread's events in the spool
 * (PP_CHUNK_EVENTS_PACKED; layout in spool.h).
 *
 * The writer's cost per event is mostly bytes: the copy into the page
 * cache (fresh pages for a growing file) and the checksum. A begin is
 * ~4 bytes packed and an end ~2 instead of 24, so the writer, which on a
 * busy machine shares the cores with the recording threads, does a
 * fraction of the work. Recording threads still write fixed 24-byte
 * events: packing happens when the writer (or a draining thread) takes
 * them.
 */
#include "recorder_internal.h"

#include <string.h>

static inline unsigned char *put_varint(unsigned char *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*o++ = (unsigned char)v;
	return o;
}

size_t pp_events_pack(const pp_event *ev, size_t n, unsigned char *out)
{
	unsigned char *o = out;
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		const pp_event *e = &ev[i];
		if (e->type == 0 || e->type > PP_PACK_TYPE_MASK) {
			/* a type the tag cannot hold: the event as it is */
			*o++ = 0;
			memcpy(o, e, sizeof *e);
			o += sizeof *e;
			continue;
		}
		unsigned char *tag = o++;
		unsigned t = e->type;
		int64_t d = (int64_t)(e->ts - prev);
		prev = e->ts;
		o = put_varint(o, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
		if (e->kind) {
			t |= PP_PACK_KIND;
			*o++ = e->kind;
		}
		if (e->reserved) {
			t |= PP_PACK_RESERVED;
			o = put_varint(o, e->reserved);
		}
		if (e->name) {
			t |= PP_PACK_NAME;
			o = put_varint(o, e->name);
		}
		if (e->arg == UINT64_MAX) {
			t |= PP_PACK_ARG_NONE;
		} else if (e->arg) {
			t |= PP_PACK_ARG;
			o = put_varint(o, e->arg);
		}
		*tag = (unsigned char)t;
	}
	return (size_t)(o - out);
}

static int get_varint(pp_unpack *u, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (u->off >= u->len)
			return -1;
		unsigned char b = u->p[u->off++];
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

long pp_events_unpack(pp_unpack *u, pp_event *out, size_t cap)
{
	size_t k = 0;
	while (k < cap && u->off < u->len) {
		pp_event *e = &out[k];
		unsigned t = u->p[u->off++];
		if (t == 0) {
			if (u->len - u->off < sizeof *e)
				return -1;
			memcpy(e, u->p + u->off, sizeof *e);
			u->off += sizeof *e;
			k++;
			continue;
		}
		uint64_t zz, v;
		if (get_varint(u, &zz) != 0)
			return -1;
		memset(e, 0, sizeof *e);
		u->ts += (zz >> 1) ^ (0 - (zz & 1));
		e->ts = u->ts;
		e->type = (uint8_t)(t & PP_PACK_TYPE_MASK);
		if (t & PP_PACK_KIND) {
			if (u->off >= u->len)
				return -1;
			e->kind = u->p[u->off++];
		}
		if (t & PP_PACK_RESERVED) {
			if (get_varint(u, &v) != 0 || v > UINT16_MAX)
				return -1;
			e->reserved = (uint16_t)v;
		}
		if (t & PP_PACK_NAME) {
			if (get_varint(u, &v) != 0 || v > UINT32_MAX)
				return -1;
			e->name = (uint32_t)v;
		}
		if ((t & PP_PACK_ARG) && (t & PP_PACK_ARG_NONE))
			return -1;
		if (t & PP_PACK_ARG_NONE)
			e->arg = UINT64_MAX;
		else if ((t & PP_PACK_ARG) && get_varint(u, &e->arg) != 0)
			return -1;
		k++;
	}
	return (long)k;
}
