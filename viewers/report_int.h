/* report_int.h — private to viewers/: what the report's files share. The
 * page skeleton and section order are report.c's; each section is one
 * report_<section>.c that writes its part of a run's panel (or of the
 * overview) through the helpers of html.h. Sections compute nothing the
 * rules also judge: step numbers come from diag (diag_steps.h), once per
 * run into html_state. */
#ifndef PP_REPORT_INT_H
#define PP_REPORT_INT_H

#include "view_int.h"
#include "html.h"
#include "diag_steps.h"

/* CSS/JS of the report, embedded from report.css / report.js at build time. */
extern const char pp_report_css[];
extern const char pp_report_js[];

typedef struct html_state {
	pp_finding *findings;     /* all stored findings, or computed ones */
	int n_findings;
	int computed;             /* findings came from the rules now, not the store */
	pp_step_summary *steps;   /* diag's step summary of each run (c->runs order), read once */
} html_state;

/* report.c: a run's name as headings show it (scenario / variant, label,
 * command, or "run N"), escaped. */
void report_run_title(pp_out *o, const pp_run_info *r);

/* report_findings.c */
void report_load_findings(pp_view_ctx *c, html_state *s);
const char *report_sev_class(const char *severity);
void report_finding_block(pp_out *o, const pp_finding *f, const pp_run_info *run);
/* Findings of a run above info; *high: how many are high. */
int report_count_findings(html_state *s, int64_t run_id, int *high);
void report_findings(pp_view_ctx *c, html_state *s, const pp_run_info *run);

/* report_summary.c: the overview tab. Scenario groups in order of first
 * appearance ("" = runs without one); names[] point into c->runs (at most
 * n_runs groups). */
int report_scenario_groups(pp_view_ctx *c, const char **names);
void report_summary(pp_view_ctx *c, html_state *s);
/* report_ranks.c: per-rank swimlanes of each distributed job (overview) */
void report_ranks(pp_view_ctx *c);

/* A run's panel, in the page's order (report.c calls them). */
void report_waterfall(pp_view_ctx *c, const pp_run_info *run, const pp_model *m); /* report_phases.c */
void report_imports(pp_view_ctx *c, const pp_model *m);
void report_phase_totals(pp_view_ctx *c, const pp_run_info *run);                 /* report_phases.c */
void report_steps(pp_view_ctx *c, const pp_run_info *run, const pp_step_summary *ss);
void report_timeline(pp_view_ctx *c, const pp_run_info *run, const pp_model *m);
void report_ops(pp_view_ctx *c, const pp_run_info *run, const pp_op_stat *ops, int n);
void report_memory(pp_view_ctx *c, const pp_run_info *run, int64_t t_end);
void report_graph(pp_view_ctx *c, const pp_run_info *run, const pp_op_stat *ops, int n_ops);
void report_flame(pp_view_ctx *c, const pp_run_info *run);
void report_libs_io(pp_view_ctx *c, const pp_run_info *run);
void report_meta(pp_view_ctx *c, const pp_run_info *run);

#endif
