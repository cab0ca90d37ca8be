/*
 * registry.c — op definitions and kernel registrations.
 *
 * Op libraries are static tables (flow_op_def / flow_kernel_def, see
 * flow_internal.h) listed by a generated include. Registering an op means
 * parsing its spec strings into a flow_registered_op, validating every field
 * and attaching its kernels — real work, as OpDefBuilder's parse and
 * ValidateKernelRegistrations are in TensorFlow.
 *
 * FULL mode does that for every op and every kernel at flow_init (TF's
 * first-lookup cost of the whole registry). LITE mode does it for one op the
 * first time a graph (or eager call) uses it.
 */
#include "core.h"
#include "phaseprof.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLOW_LIB(n) extern const flow_op_lib flow_oplib_##n;
#include "flow_oplibs.inc"
#undef FLOW_LIB
#define FLOW_LIB(n) &flow_oplib_##n,
static const flow_op_lib *const builtin_libs[] = {
#include "flow_oplibs.inc"
	NULL};
#undef FLOW_LIB

typedef struct entry {
	const flow_op_def *def;
	const flow_op_lib *lib;
	flow_registered_op *reg;     /* NULL until registered */
} entry;

static struct {
	pthread_mutex_t mu;
	int inited;
	int mode;
	const flow_op_lib **libs;
	int n_libs;
	entry *e;
	int n, cap;
	pp_hash index;               /* op name -> index in e[] */
	int kernels_known, kernels_registered, ops_registered;
	uint64_t ns;
	const char **names;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int index_find(const char *name)
{
	uint32_t h = pp_hash_str(name), k;
	for (uint32_t it = 0; pp_hash_next(&R.index, h, &it, &k);)
		if (!strcmp(R.e[k].def->name, name))
			return (int)k;
	return -1;
}

static int index_build(flow_status *st)
{
	pp_hash_clear(&R.index);
	if (pp_hash_reserve(&R.index, (uint32_t)R.n)) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "op registry: out of memory");
		return -1;
	}
	for (int k = 0; k < R.n; k++) {
		const char *name = R.e[k].def->name;
		uint32_t h = pp_hash_str(name), j;
		for (uint32_t it = 0; pp_hash_next(&R.index, h, &it, &j);)
			if (!strcmp(R.e[j].def->name, name)) {
				flow_status_set(st, FLOW_ALREADY_EXISTS,
						"op registry: op '%s' defined twice (libraries '%s' and '%s')",
						name, R.e[j].lib->name, R.e[k].lib->name);
				return -1;
			}
		pp_hash_add(&R.index, h, (uint32_t)k); /* room reserved: cannot fail */
	}
	return 0;
}

static int add_lib(const flow_op_lib *lib, flow_status *st)
{
	const flow_op_lib **nl = realloc(R.libs, sizeof *nl * (size_t)(R.n_libs + 1));
	if (!nl)
		return -1;
	R.libs = nl;
	R.libs[R.n_libs++] = lib;
	R.kernels_known += lib->n_kernels;
	for (int i = 0; i < lib->n_ops; i++) {
		if (!lib->ops[i].name) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "op library '%s': op #%d has no name",
					lib->name, i);
			return -1;
		}
		if (R.n == R.cap) {
			int nc = R.cap ? R.cap * 2 : 256;
			entry *ne = realloc(R.e, sizeof *ne * (size_t)nc);
			if (!ne)
				return -1;
			R.e = ne;
			R.cap = nc;
		}
		R.e[R.n].def = &lib->ops[i];
		R.e[R.n].lib = lib;
		R.e[R.n].reg = NULL;
		R.n++;
	}
	return 0;
}

/* ---- spec parsing ---- */
static const char *skip_ws(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

/* Copies the next token up to a delimiter in `delims` (trimmed). */
static const char *next_field(const char *p, char delim, char *out, size_t len)
{
	p = skip_ws(p);
	const char *s = p;
	int depth = 0;
	while (*p && (*p != delim || depth)) {
		if (*p == '[' || *p == '{' || *p == '(')
			depth++;
		else if (*p == ']' || *p == '}' || *p == ')')
			depth--;
		p++;
	}
	size_t n = (size_t)(p - s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= len)
		n = len - 1;
	memcpy(out, s, n);
	out[n] = 0;
	return *p ? p + 1 : p;
}

static int valid_ident(const char *s)
{
	if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

static int find_attr(const flow_registered_op *r, const char *name)
{
	for (int i = 0; i < r->n_attrs; i++)
		if (!strcmp(r->attrs[i].name, name))
			return i;
	return -1;
}

static int parse_list_i64(const char *s, int64_t **out, int *n)
{
	s = skip_ws(s);
	if (*s != '[')
		return -1;
	s++;
	int cap = 8, k = 0;
	int64_t *v = malloc(sizeof *v * (size_t)cap);
	if (!v)
		return -1;
	for (;;) {
		s = skip_ws(s);
		if (*s == ']')
			break;
		char *end;
		errno = 0;
		long long x = strtoll(s, &end, 10);
		if (end == s || errno) {
			free(v);
			return -1;
		}
		if (k == cap) {
			cap *= 2;
			int64_t *nv = realloc(v, sizeof *v * (size_t)cap);
			if (!nv) {
				free(v);
				return -1;
			}
			v = nv;
		}
		v[k++] = x;
		s = skip_ws(end);
		if (*s == ',')
			s++;
		else if (*s != ']') {
			free(v);
			return -1;
		}
	}
	if (*skip_ws(s + 1)) {
		free(v);
		return -1;
	}
	*out = v;
	*n = k;
	return 0;
}

static int parse_default(flow_attr_spec *a, const char *s)
{
	char *end;
	flow_attr_value *v = &a->def;
	v->kind = a->kind;
	switch (a->kind) {
	case FLOW_ATTR_INT:
		errno = 0;
		v->u.i = strtoll(s, &end, 10);
		return end == s || *skip_ws(end) || errno ? -1 : 0;
	case FLOW_ATTR_FLOAT:
		v->u.f = strtod(s, &end);
		return end == s || *skip_ws(end) ? -1 : 0;
	case FLOW_ATTR_BOOL:
		if (!strcmp(s, "true") || !strcmp(s, "false")) {
			v->u.b = s[0] == 't';
			return 0;
		}
		return -1;
	case FLOW_ATTR_TYPE:
		v->u.type = flow_dtype_from_name(s);
		if (!v->u.type)
			return -1;
		if (a->allowed && !(a->allowed & (1u << v->u.type)))
			return -1;
		return 0;
	case FLOW_ATTR_SHAPE: {
		if (!strcmp(s, "?")) {
			v->u.shape = flow_shape_unknown();
			return 0;
		}
		int64_t *d;
		int n;
		if (parse_list_i64(s, &d, &n))
			return -1;
		if (n > FLOW_MAX_DIMS) {
			free(d);
			return -1;
		}
		v->u.shape = flow_shape_make(n, d);
		free(d);
		return 0;
	}
	case FLOW_ATTR_STRING: {
		size_t n = strlen(s);
		if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
			v->u.s = strndup(s + 1, n - 2);
		} else {
			v->u.s = strdup(s);
		}
		return v->u.s ? 0 : -1;
	}
	case FLOW_ATTR_INTS:
		return parse_list_i64(s, &v->u.ints.v, &v->u.ints.n);
	case FLOW_ATTR_FLOATS: {
		s = skip_ws(s);
		if (*s != '[')
			return -1;
		s++;
		int cap = 8, k = 0;
		double *d = malloc(sizeof *d * (size_t)cap);
		if (!d)
			return -1;
		for (;;) {
			s = skip_ws(s);
			if (*s == ']')
				break;
			double x = strtod(s, &end);
			if (end == s) {
				free(d);
				return -1;
			}
			if (k == cap) {
				cap *= 2;
				double *nd = realloc(d, sizeof *d * (size_t)cap);
				if (!nd) {
					free(d);
					return -1;
				}
				d = nd;
			}
			d[k++] = x;
			s = skip_ws(end);
			if (*s == ',')
				s++;
			else if (*s != ']') {
				free(d);
				return -1;
			}
		}
		v->u.floats.v = d;
		v->u.floats.n = k;
		return 0;
	}
	default:
		return -1;
	}
}

static int parse_attr(flow_attr_spec *a, const char *text, const char *op, flow_status *st)
{
	char name[64], rest[256];
	const char *p = next_field(text, ':', name, sizeof name);
	snprintf(rest, sizeof rest, "%s", p);
	if (!valid_ident(name) || strlen(name) >= sizeof a->name || !*rest) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': bad attr spec '%s' (want 'name: kind')",
				op, text);
		return -1;
	}
	memcpy(a->name, name, strlen(name) + 1); /* length checked above */
	/* split "kind [>= min] [= default]" */
	char kind[128] = "", dflt[160] = "", minv[40] = "";
	const char *q = skip_ws(rest);
	if (*q == '{') {
		const char *e = strchr(q, '}');
		if (!e) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s': unclosed '{'", op, name);
			return -1;
		}
		snprintf(kind, sizeof kind, "%.*s", (int)(e - q + 1), q);
		q = e + 1;
	} else {
		size_t n = 0;
		while (q[n] && (isalnum((unsigned char)q[n]) || q[n] == '_'))
			n++;
		snprintf(kind, sizeof kind, "%.*s", (int)n, q);
		q += n;
	}
	q = skip_ws(q);
	if (q[0] == '>' && q[1] == '=') {
		q = skip_ws(q + 2);
		size_t n = 0;
		while (q[n] && (isdigit((unsigned char)q[n]) || q[n] == '-'))
			n++;
		snprintf(minv, sizeof minv, "%.*s", (int)n, q);
		q = skip_ws(q + n);
	}
	if (*q == '=') {
		snprintf(dflt, sizeof dflt, "%s", skip_ws(q + 1));
		size_t n = strlen(dflt);
		while (n && isspace((unsigned char)dflt[n - 1]))
			dflt[--n] = 0;
		if (!n) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s': empty default", op, name);
			return -1;
		}
	} else if (*q) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s': unexpected '%s'", op, name, q);
		return -1;
	}
	static const struct { const char *n; flow_attr_kind k; } kinds[] = {
		{"int", FLOW_ATTR_INT}, {"float", FLOW_ATTR_FLOAT}, {"bool", FLOW_ATTR_BOOL},
		{"type", FLOW_ATTR_TYPE}, {"shape", FLOW_ATTR_SHAPE}, {"string", FLOW_ATTR_STRING},
		{"ints", FLOW_ATTR_INTS}, {"floats", FLOW_ATTR_FLOATS}, {"tensor", FLOW_ATTR_TENSOR}};
	a->kind = FLOW_ATTR_NONE;
	if (kind[0] == '{') {
		a->kind = FLOW_ATTR_TYPE;
		char item[32];
		const char *s = kind + 1;
		while (*s && *s != '}') {
			size_t n = 0;
			while (s[n] && s[n] != ',' && s[n] != '}')
				n++;
			snprintf(item, sizeof item, "%.*s", (int)n, s);
			char *t = item;
			while (isspace((unsigned char)*t))
				t++;
			size_t tl = strlen(t);
			while (tl && isspace((unsigned char)t[tl - 1]))
				t[--tl] = 0;
			flow_dtype dt = flow_dtype_from_name(t);
			if (!dt) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s': unknown dtype '%s'",
						op, name, t);
				return -1;
			}
			a->allowed |= 1u << dt;
			s += n;
			if (*s == ',')
				s++;
		}
		if (!a->allowed) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s': empty type set", op, name);
			return -1;
		}
	} else {
		for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
			if (!strcmp(kinds[i].n, kind))
				a->kind = kinds[i].k;
	}
	if (a->kind == FLOW_ATTR_NONE) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s': unknown kind '%s'", op, name, kind);
		return -1;
	}
	if (minv[0]) {
		if (a->kind != FLOW_ATTR_INT) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s': '>=' needs an int attr",
					op, name);
			return -1;
		}
		a->has_min = 1;
		a->min = strtoll(minv, NULL, 10);
	}
	if (dflt[0]) {
		if (a->kind == FLOW_ATTR_TENSOR || parse_default(a, dflt)) {
			flow__attr_value_free(&a->def);
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s': bad default '%s' for kind %s",
					op, name, dflt, kind);
			return -1;
		}
		if (a->has_min && a->def.u.i < a->min) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s': default %lld below min %lld",
					op, name, (long long)a->def.u.i, (long long)a->min);
			return -1;
		}
		a->has_default = 1;
	}
	return 0;
}

static int parse_arg(flow_registered_op *r, flow_arg_spec *a, const char *text, int is_input,
		     flow_status *st)
{
	const char *op = r->def->name;
	char name[64], type[128];
	const char *p = next_field(text, ':', name, sizeof name);
	snprintf(type, sizeof type, "%s", skip_ws(p));
	size_t tl = strlen(type);
	while (tl && isspace((unsigned char)type[tl - 1]))
		type[--tl] = 0;
	if (!valid_ident(name) || strlen(name) >= sizeof a->name || !type[0]) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': bad %s spec '%s' (want 'name: type')",
				op, is_input ? "input" : "output", text);
		return -1;
	}
	memcpy(a->name, name, strlen(name) + 1); /* length checked above */
	a->type_attr = a->list_attr = -1;
	char *t = type;
	if (!strncmp(t, "Ref(", 4)) {
		if (!is_input || t[tl - 1] != ')') {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': %s '%s': Ref() only on inputs",
					op, is_input ? "input" : "output", name);
			return -1;
		}
		a->is_ref = 1;
		t[tl - 1] = 0;
		t += 4;
	}
	char *star = strchr(t, '*');
	if (star) {
		*star = 0;
		int k = find_attr(r, t);
		if (k < 0 || r->attrs[k].kind != FLOW_ATTR_INT) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"op '%s': %s '%s': list length '%s' is not an int attr", op,
					is_input ? "input" : "output", name, t);
			return -1;
		}
		a->list_attr = k;
		t = star + 1;
	}
	flow_dtype dt = flow_dtype_from_name(t);
	if (dt) {
		a->fixed = dt;
		return 0;
	}
	int k = find_attr(r, t);
	if (k < 0 || r->attrs[k].kind != FLOW_ATTR_TYPE) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT,
				"op '%s': %s '%s': type '%s' is neither a dtype nor a type attr", op,
				is_input ? "input" : "output", name, t);
		return -1;
	}
	a->type_attr = k;
	return 0;
}

static int count_fields(const char *s, char delim)
{
	if (!s || !*skip_ws(s))
		return 0;
	int n = 1, depth = 0;
	for (; *s; s++) {
		if (*s == '[' || *s == '{' || *s == '(')
			depth++;
		else if (*s == ']' || *s == '}' || *s == ')')
			depth--;
		else if (*s == delim && !depth)
			n++;
	}
	return n;
}

static void reg_free(flow_registered_op *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->n_attrs; i++)
		flow__attr_value_free(&r->attrs[i].def);
	free(r->attrs);
	free(r->inputs);
	free(r->outputs);
	free(r->kernels);
	free(r);
}

static flow_registered_op *build_op(const entry *e, flow_status *st)
{
	const flow_op_def *d = e->def;
	if (!valid_ident(d->name)) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "op library '%s': invalid op name '%s'",
				e->lib->name, d->name);
		return NULL;
	}
	flow_registered_op *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->def = d;
	r->lib = e->lib;
	r->kernel_type_attr = -1;
	int na = count_fields(d->attrs, ';'), ni = count_fields(d->inputs, ','),
	    no = count_fields(d->outputs, ',');
	r->attrs = calloc((size_t)na + 1, sizeof *r->attrs);
	r->inputs = calloc((size_t)ni + 1, sizeof *r->inputs);
	r->outputs = calloc((size_t)no + 1, sizeof *r->outputs);
	if (!r->attrs || !r->inputs || !r->outputs)
		goto fail;
	const char *p = d->attrs;
	char field[384];
	for (int i = 0; i < na; i++) {
		p = next_field(p, ';', field, sizeof field);
		if (!field[0])
			continue;  /* tolerate a trailing ';' */
		if (parse_attr(&r->attrs[r->n_attrs], field, d->name, st))
			goto fail;
		if (find_attr(r, r->attrs[r->n_attrs].name) >= 0) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': attr '%s' declared twice",
					d->name, r->attrs[r->n_attrs].name);
			r->n_attrs++;
			goto fail;
		}
		r->n_attrs++;
	}
	for (int i = 0; i < r->n_attrs; i++)
		if (r->attrs[i].kind == FLOW_ATTR_TYPE) {
			r->kernel_type_attr = i;
			break;
		}
	p = d->inputs;
	for (int i = 0; i < ni; i++) {
		p = next_field(p, ',', field, sizeof field);
		if (parse_arg(r, &r->inputs[r->n_inputs], field, 1, st))
			goto fail;
		r->n_inputs++;
	}
	p = d->outputs;
	for (int i = 0; i < no; i++) {
		p = next_field(p, ',', field, sizeof field);
		if (parse_arg(r, &r->outputs[r->n_outputs], field, 0, st))
			goto fail;
		r->n_outputs++;
	}
	/* Argument names must be unique across inputs and outputs. */
	for (int i = 0; i < r->n_inputs + r->n_outputs; i++)
		for (int j = i + 1; j < r->n_inputs + r->n_outputs; j++) {
			const char *a = i < r->n_inputs ? r->inputs[i].name : r->outputs[i - r->n_inputs].name;
			const char *b = j < r->n_inputs ? r->inputs[j].name : r->outputs[j - r->n_inputs].name;
			if (!strcmp(a, b)) {
				flow_status_set(st, FLOW_INVALID_ARGUMENT, "op '%s': argument '%s' declared twice",
						d->name, a);
				goto fail;
			}
		}
	return r;
fail:
	if (flow_status_ok(st))
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "op registry: out of memory");
	reg_free(r);
	return NULL;
}

static int check_kernel(const flow_registered_op *r, const flow_kernel_def *k, const flow_op_lib *lib,
			flow_status *st)
{
	if (!k->fn) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "op library '%s': kernel for '%s' has no function",
				lib->name, k->op);
		return -1;
	}
	if ((unsigned)k->device > FLOW_GPU) {
		flow_status_set(st, FLOW_INVALID_ARGUMENT, "op library '%s': kernel for '%s': bad device %d",
				lib->name, k->op, (int)k->device);
		return -1;
	}
	if (k->dtype) {
		if (r->kernel_type_attr < 0) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"op library '%s': kernel for '%s' constrains dtype %s but the op has no type attr",
					lib->name, k->op, flow_dtype_name(k->dtype));
			return -1;
		}
		unsigned allowed = r->attrs[r->kernel_type_attr].allowed;
		if (allowed && !(allowed & (1u << k->dtype))) {
			flow_status_set(st, FLOW_INVALID_ARGUMENT,
					"op library '%s': kernel for '%s' registered for %s, which attr '%s' does not allow",
					lib->name, k->op, flow_dtype_name(k->dtype),
					r->attrs[r->kernel_type_attr].name);
			return -1;
		}
	}
	for (int i = 0; i < r->n_kernels; i++)
		if (r->kernels[i]->device == k->device && r->kernels[i]->dtype == k->dtype) {
			flow_status_set(st, FLOW_ALREADY_EXISTS,
					"op library '%s': kernel for '%s' (%s, %s) registered twice", lib->name,
					k->op, k->device == FLOW_CPU ? "cpu" : "gpu", flow_dtype_name(k->dtype));
			return -1;
		}
	return 0;
}

static int attach_kernel(flow_registered_op *r, const flow_kernel_def *k)
{
	const flow_kernel_def **nk = realloc(r->kernels, sizeof *nk * (size_t)(r->n_kernels + 1));
	if (!nk)
		return -1;
	r->kernels = nk;
	r->kernels[r->n_kernels++] = k;
	R.kernels_registered++;
	return 0;
}

/* Registers entry k (LITE path): parse, then scan every kernel table. */
static flow_registered_op *register_one(int k, flow_status *st)
{
	PP_PHASE(PP_OP_REGISTRATION, "op_registration_lite");
	uint64_t t0 = flow_now_ns();
	flow_registered_op *r = build_op(&R.e[k], st);
	if (!r)
		return NULL;
	for (int l = 0; l < R.n_libs; l++) {
		const flow_op_lib *lib = R.libs[l];
		for (int i = 0; i < lib->n_kernels; i++)
			if (!strcmp(lib->kernels[i].op, r->def->name)) {
				if (check_kernel(r, &lib->kernels[i], lib, st) ||
				    attach_kernel(r, &lib->kernels[i])) {
					reg_free(r);
					return NULL;
				}
			}
	}
	R.e[k].reg = r;
	R.ops_registered++;
	R.ns += flow_now_ns() - t0;
	return r;
}

/* FULL: every op, then every kernel against its op. On an error nothing of
 * this pass stays (the registry keeps working in LITE fashion, so one broken
 * def breaks only its own op) and the error names the library and op. */
static int register_all(flow_status *st)
{
	PP_PHASE(PP_OP_REGISTRATION, "op_registration_full");
	uint64_t t0 = flow_now_ns();
	int *had = malloc(sizeof(int) * (size_t)(R.n + 1)); /* kernels before, -1: built here */
	if (!had) {
		flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "op registry: out of memory");
		return -1;
	}
	int rc = -1;
	for (int k = 0; k < R.n; k++)
		had[k] = R.e[k].reg ? R.e[k].reg->n_kernels : -1;
	for (int k = 0; k < R.n; k++) {
		if (R.e[k].reg)
			continue;
		flow_registered_op *r = build_op(&R.e[k], st);
		if (!r)
			goto rollback;
		R.e[k].reg = r;
		R.ops_registered++;
	}
	for (int l = 0; l < R.n_libs; l++) {
		const flow_op_lib *lib = R.libs[l];
		for (int i = 0; i < lib->n_kernels; i++) {
			const flow_kernel_def *kd = &lib->kernels[i];
			int k = kd->op ? index_find(kd->op) : -1;
			if (k < 0) {
				flow_status_set(st, FLOW_NOT_FOUND,
						"op library '%s': kernel #%d registered for unknown op '%s'",
						lib->name, i, kd->op ? kd->op : "(null)");
				goto rollback;
			}
			flow_registered_op *r = R.e[k].reg;
			int dup = 0;
			for (int j = 0; j < r->n_kernels; j++)
				if (r->kernels[j] == kd)
					dup = 1;  /* attached earlier by a LITE registration */
			if (dup)
				continue;
			if (check_kernel(r, kd, lib, st) || attach_kernel(r, kd))
				goto rollback;
		}
	}
	R.ns += flow_now_ns() - t0;
	pp_counter("flow.ops_registered", R.ops_registered);
	pp_counter("flow.kernels_registered", R.kernels_registered);
	rc = 0;
	goto out;
rollback:
	for (int k = 0; k < R.n; k++) {
		flow_registered_op *r = R.e[k].reg;
		if (!r)
			continue;
		if (had[k] < 0) {
			R.ops_registered--;
			R.kernels_registered -= r->n_kernels;
			reg_free(r);
			R.e[k].reg = NULL;
		} else {
			R.kernels_registered -= r->n_kernels - had[k];
			r->n_kernels = had[k];
		}
	}
	R.mode = FLOW_REGISTER_LITE;
out:
	free(had);
	return rc;
}

int flow__registry_init(int mode, flow_status *st)
{
	pthread_mutex_lock(&R.mu);
	int rc = 0;
	if (!R.inited) {
		for (int i = 0; builtin_libs[i]; i++)
			if (add_lib(builtin_libs[i], st)) {
				rc = -1;
				break;
			}
		if (!rc)
			rc = index_build(st);
		R.inited = 1;
		R.mode = mode;
	}
	if (!rc && mode == FLOW_REGISTER_FULL) {
		R.mode = FLOW_REGISTER_FULL;
		rc = register_all(st);
	}
	pthread_mutex_unlock(&R.mu);
	return rc;
}

int flow__registry_complete(flow_status *st)
{
	return flow__registry_init(FLOW_REGISTER_FULL, st);
}

int flow__registry_mode(void)
{
	return R.mode;
}

void flow__registry_free(void)
{
	pthread_mutex_lock(&R.mu);
	for (int k = 0; k < R.n; k++)
		reg_free(R.e[k].reg);
	free(R.e);
	pp_hash_free(&R.index);
	free(R.libs);
	free(R.names);
	R.e = NULL;
	R.libs = NULL;
	R.names = NULL;
	R.n = R.cap = R.n_libs = 0;
	R.kernels_known = R.kernels_registered = R.ops_registered = 0;
	R.ns = 0;
	R.inited = 0;
	pthread_mutex_unlock(&R.mu);
}

/* Removes the last-added library again: its entries, their parsed defs and
 * any of its kernels already attached to other ops. */
static void drop_last_lib(const flow_op_lib *lib, int n_before)
{
	for (int k = n_before; k < R.n; k++) {
		if (R.e[k].reg) {
			R.ops_registered--;
			R.kernels_registered -= R.e[k].reg->n_kernels;
		}
		reg_free(R.e[k].reg);
	}
	R.n = n_before;
	for (int k = 0; k < R.n; k++) {
		flow_registered_op *r = R.e[k].reg;
		if (!r)
			continue;
		int j = 0;
		for (int i = 0; i < r->n_kernels; i++)
			if (r->kernels[i] >= lib->kernels && r->kernels[i] < lib->kernels + lib->n_kernels)
				R.kernels_registered--;
			else
				r->kernels[j++] = r->kernels[i];
		r->n_kernels = j;
	}
	if (R.n_libs && R.libs[R.n_libs - 1] == lib) {
		R.n_libs--;
		R.kernels_known -= lib->n_kernels;
	}
	index_build(NULL);
}

int flow_registry_add_library(const flow_op_lib *lib, flow_status *st)
{
	flow__ensure_init();
	pthread_mutex_lock(&R.mu);
	int n_before = R.n, mode = R.mode;
	int rc = add_lib(lib, st);
	if (!rc)
		rc = index_build(st);
	if (!rc && R.mode == FLOW_REGISTER_FULL)
		rc = register_all(st);
	if (rc) {
		if (flow_status_ok(st))
			flow_status_set(st, FLOW_RESOURCE_EXHAUSTED, "op library '%s': out of memory", lib->name);
		drop_last_lib(lib, n_before);
		R.mode = mode; /* the rest of the registry is as complete as before */
	}
	free(R.names);
	R.names = NULL;
	pthread_mutex_unlock(&R.mu);
	return rc;
}

const flow_registered_op *flow_registry_lookup(const char *op_type, flow_status *st)
{
	flow__ensure_init();
	pthread_mutex_lock(&R.mu);
	int k = op_type ? index_find(op_type) : -1;
	flow_registered_op *r = NULL;
	if (k < 0)
		flow_status_set(st, FLOW_NOT_FOUND, "unknown op '%s' (not in any linked op library)",
				op_type ? op_type : "(null)");
	else
		r = R.e[k].reg ? R.e[k].reg : register_one(k, st);
	pthread_mutex_unlock(&R.mu);
	return r;
}

const flow_kernel_def *flow_registry_kernel(const flow_registered_op *r, flow_device dev, flow_dtype dt)
{
	const flow_kernel_def *any = NULL;
	for (int i = 0; i < r->n_kernels; i++) {
		if (r->kernels[i]->device != dev)
			continue;
		if (r->kernels[i]->dtype == dt)
			return r->kernels[i];
		if (!r->kernels[i]->dtype)
			any = r->kernels[i];
	}
	return any;
}

void flow_registry_stats_get(flow_registry_stats *out)
{
	flow__ensure_init();
	pthread_mutex_lock(&R.mu);
	out->ops_known = R.n;
	out->ops_registered = R.ops_registered;
	out->kernels_known = R.kernels_known;
	out->kernels_registered = R.kernels_registered;
	out->mode = R.mode;
	out->registration_ns = R.ns;
	pthread_mutex_unlock(&R.mu);
}

const char *const *flow_op_names(int *n)
{
	flow__ensure_init();
	pthread_mutex_lock(&R.mu);
	if (!R.names) {
		R.names = calloc((size_t)R.n + 1, sizeof *R.names);
		for (int k = 0; R.names && k < R.n; k++)
			R.names[k] = R.e[k].def->name;
	}
	if (n)
		*n = R.names ? R.n : 0;
	pthread_mutex_unlock(&R.mu);
	return R.names;
}
