/*
 * session_spools.c — the session's spool folder: the spools in it, the
 * watch that sees the program's spool closed at its exit (to ingest it
 * while the kernel tears the process down), its removal.
 */
#include "pp_session_internal.h"
#include "pp_grow.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* The session's spools (*.spool in dir); NULL paths on failure. */
int session_list_spools(const char *dir, pp_ingest_spool **out)
{
	pp_ingest_spool *sp = NULL;
	int n = 0, cap = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l < 7 || strcmp(de->d_name + l - 6, ".spool") != 0)
			continue;
		if (PP_GROW(sp, n + 1, cap) != 0)
			break;
		memset(&sp[n], 0, sizeof sp[n]);
		size_t pl = strlen(dir) + l + 2;
		char *path = malloc(pl);
		if (!path)
			break;
		snprintf(path, pl, "%s/%s", dir, de->d_name);
		sp[n++].path = path;
	}
	if (d)
		closedir(d);
	*out = sp;
	return n;
}

void session_free_spools(pp_ingest_spool *sp, int n)
{
	for (int i = 0; i < n; i++)
		free((char *)sp[i].path);
	free(sp);
}

int session_rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	char p[PATH_MAX];
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	closedir(d);
	return rmdir(dir);
}

/* Under MPI the launcher's ranks write spools of their own: no watch. */
void session_watch(early_ingest *e, const char *dir, int mpi)
{
	memset(e, 0, sizeof *e);
	e->watch = mpi ? -1 : inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (e->watch >= 0 && (e->wd = inotify_add_watch(e->watch, dir, IN_CLOSE_WRITE)) < 0) {
		close(e->watch);
		e->watch = -1;
	}
}

/* pid's spool closed at its exit, alone in dir: its path in e->path */
int session_closed_at_exit(early_ingest *e, const char *dir, pid_t pid)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	char prefix[32];
	int n = snprintf(prefix, sizeof prefix, "%d-", (int)pid), found = 0;
	ssize_t len;
	while ((len = read(e->watch, buf, sizeof buf)) > 0)
		for (char *q = buf; q < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)q;
			size_t l = ev->len ? strlen(ev->name) : 0;
			if (l > 6 && !strncmp(ev->name, prefix, (size_t)n) && !strcmp(ev->name + l - 6, ".spool")) {
				snprintf(e->path, sizeof e->path, "%.4000s/%.255s", dir, ev->name);
				found = 1;
			}
			q += sizeof *ev + ev->len;
		}
	if (!found)
		return 0;
	pp_ingest_spool *sp = NULL;
	int nsp = session_list_spools(dir, &sp);
	session_free_spools(sp, nsp);
	char err[256];
	const pp_spool_summary *m = &e->m;
	return nsp == 1 && pp_spool_summarise(e->path, &e->m, err, sizeof err) == 0 && m->agent_closed &&
	       m->exit_code >= 0 && !m->exit_signal && (!strcmp(m->end, "exit") || !strcmp(m->end, "_exit"));
}
