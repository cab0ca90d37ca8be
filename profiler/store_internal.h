/* store_internal.h — private to the store's files. */
#ifndef PP_STORE_INTERNAL_H
#define PP_STORE_INTERNAL_H

#include "store.h"

typedef struct intern_slot {
	char *text;
	int64_t id;
	uint32_t hash;
} intern_slot;

struct pp_store {
	sqlite3 *db;
	char path[4096];
	int mode;
	int schema_version;
	/* string -> id cache over the strings table (write mode) */
	intern_slot *slots;
	uint32_t cap, n;
	sqlite3_stmt *ins_string, *sel_string;
};

void pp_store_register_functions(sqlite3 *db);
void pp_store_intern_cache_free(pp_store *st);
/* The id of len bytes at s in `strings` (added if new); -1 on a db error. */
int64_t pp_store_intern_n(pp_store *st, const char *s, size_t len);

#endif
