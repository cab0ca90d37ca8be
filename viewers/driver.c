/* driver.c — selects runs, opens the sink and drives one backend's ops. */
#include "view_int.h"

#include <stdlib.h>
#include <string.h>

static const pp_view_ops *const backends[] = {
	&pp_backend_html, &pp_backend_chrome, &pp_backend_perfetto, &pp_backend_folded,
	&pp_backend_dot, &pp_backend_svg, &pp_backend_csv, NULL,
};

const pp_view_ops *const *pp_view_backends(void) { return backends; }

const pp_view_ops *pp_view_backend(const char *name)
{
	for (int i = 0; backends[i]; i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

int pp_view_fail(pp_view_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (c->err && c->errlen)
		vsnprintf(c->err, c->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int pp_view_write_out(pp_store *st, const char *format, const pp_view_opts *opts,
		      pp_out *out, char *err, size_t errlen)
{
	static const pp_view_opts defaults = {0};
	if (!opts)
		opts = &defaults;
	const pp_view_ops *ops = pp_view_backend(format);
	if (!ops) {
		char list[128] = "";
		for (int i = 0; backends[i]; i++) {
			strcat(list, i ? ", " : "");
			strcat(list, backends[i]->name);
		}
		snprintf(err, errlen, "unknown format '%s' (one of: %s)", format, list);
		return -1;
	}
	pp_run_info *runs = NULL;
	int n = 0;
	if (pp_store_runs(st, &runs, &n) != 0) {
		snprintf(err, errlen, "%s: cannot read the runs table", pp_store_path(st));
		return -1;
	}
	if (n == 0) {
		snprintf(err, errlen, "%s: no runs recorded in this database", pp_store_path(st));
		free(runs);
		return -1;
	}
	if (opts->run_id != 0) {
		int k = -1;
		for (int i = 0; i < n; i++)
			if (runs[i].id == opts->run_id)
				k = i;
		if (k < 0) {
			snprintf(err, errlen, "%s: no run %lld (runs here: %lld..%lld)", pp_store_path(st),
				 (long long)opts->run_id, (long long)runs[0].id, (long long)runs[n - 1].id);
			free(runs);
			return -1;
		}
		runs[0] = runs[k];
		n = 1;
	}
	pp_view_ctx c = {.st = st, .out = out, .opts = opts, .runs = runs, .n_runs = n,
			 .err = err, .errlen = errlen};
	c.base_unix_ns = runs[0].start_unix_ns;
	for (int i = 1; i < n; i++)
		if (runs[i].start_unix_ns < c.base_unix_ns)
			c.base_unix_ns = runs[i].start_unix_ns;
	err[0] = 0;
	int rc = 0;
	if (ops->begin)
		rc = ops->begin(&c);
	for (int i = 0; rc == 0 && ops->run && i < n; i++) {
		c.run_index = i;
		rc = ops->run(&c, &runs[i]);
	}
	if (ops->end) {
		/* end also runs after a failure so a backend can free its state */
		int rc2 = ops->end(&c);
		if (rc == 0)
			rc = rc2;
	}
	if (rc != 0 && !err[0])
		snprintf(err, errlen, "%s: %s output failed", pp_store_path(st), format);
	free(runs);
	return rc;
}

int pp_view_write(pp_store *st, const char *format, const pp_view_opts *opts,
		  const char *path, char *err, size_t errlen)
{
	if (!pp_view_backend(format))
		return pp_view_write_out(st, format, opts, NULL, err, errlen);
	if (strcmp(path, "-") != 0 && pp_store_is_file(st, path)) {
		snprintf(err, errlen, "%s: is the database being read; choose another output file", path);
		return -1;
	}
	pp_out *out = pp_out_open(path, opts && opts->gzip, err, errlen);
	if (!out)
		return -1;
	int rc = pp_view_write_out(st, format, opts, out, err, errlen);
	if (rc != 0) {
		pp_out_abort(out); /* nothing half written replaces the destination */
		return rc;
	}
	char cerr[512];
	if (pp_out_close(out, cerr, sizeof cerr) != 0) {
		snprintf(err, errlen, "%s", cerr);
		rc = -1;
	}
	return rc;
}
