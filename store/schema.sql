-- phaseprof store schema. Documented in docs/schema.md.
-- Rows a recorder writes with pp_row(table, …) land here with run_id as the
-- first column (graph_nodes/graph_edges: graph_id instead, remapped by ingest).
-- All times are integer nanoseconds relative to the run's start (runs.start_mono_ns)
-- unless a column says otherwise. Names are interned in `strings`.
-- Bump PP_SCHEMA_VERSION (store/include/store.h) on any change to this file.

CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS strings (id INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS phase_kinds (id INTEGER PRIMARY KEY, name TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY,
  parent_run INTEGER,            -- the run that forked/spawned this one
  label TEXT, scenario TEXT, variant TEXT,
  command TEXT, host TEXT,
  pid INTEGER, ppid INTEGER,
  start_unix_ns INTEGER, start_mono_ns INTEGER,
  duration_ns INTEGER,
  status TEXT,                   -- complete | truncated | crashed | killed | running
  exit_code INTEGER, term_signal INTEGER,
  events INTEGER, events_lost INTEGER, rows_lost INTEGER,
  spool_path TEXT, spool_bytes INTEGER,
  truncated_at INTEGER,          -- byte offset where an incomplete spool tail was cut
  clock TEXT,
  note TEXT                      -- what ingest had to say (cut tail, unmatched ends…)
);
CREATE TABLE IF NOT EXISTS run_meta (run_id INTEGER, key TEXT, value TEXT);
CREATE TABLE IF NOT EXISTS threads (run_id INTEGER, tid INTEGER, name TEXT,
  first_ns INTEGER, last_ns INTEGER, events INTEGER);

-- Phases (kind > 0) and free-form spans (kind = 0), one row per closed or
-- still-open interval. end_ns is NULL for a span still open when the run ended.
CREATE TABLE IF NOT EXISTS spans (
  id INTEGER PRIMARY KEY,
  run_id INTEGER, tid INTEGER,
  kind INTEGER, name_id INTEGER,
  start_ns INTEGER, end_ns INTEGER,
  depth INTEGER, parent_id INTEGER,
  step INTEGER                   -- iteration for step phases (and what they contain), else NULL
);
CREATE TABLE IF NOT EXISTS counters (run_id INTEGER, tid INTEGER, name_id INTEGER, ts_ns INTEGER, value REAL);
CREATE TABLE IF NOT EXISTS marks (run_id INTEGER, tid INTEGER, name_id INTEGER, ts_ns INTEGER);
CREATE TABLE IF NOT EXISTS ops (run_id INTEGER, tid INTEGER, name_id INTEGER, type_id INTEGER,
  start_ns INTEGER, end_ns INTEGER, step INTEGER);
CREATE TABLE IF NOT EXISTS losses (run_id INTEGER, source TEXT, count INTEGER, detail TEXT);

-- Graph snapshots (by version).
CREATE TABLE IF NOT EXISTS graphs (id INTEGER PRIMARY KEY, run_id INTEGER, label TEXT,
  version INTEGER, ts_ns INTEGER, n_nodes INTEGER, n_edges INTEGER);
CREATE TABLE IF NOT EXISTS graph_nodes (graph_id INTEGER, idx INTEGER, name_id INTEGER,
  op_id INTEGER, device_id INTEGER, shape TEXT, cost_ns REAL);
CREATE TABLE IF NOT EXISTS graph_edges (graph_id INTEGER, src INTEGER, dst INTEGER, src_output INTEGER);

-- Allocation summaries and sampled events (runtime allocator or malloc hooks).
CREATE TABLE IF NOT EXISTS allocations (run_id INTEGER, tid INTEGER, ts_ns INTEGER,
  source_id INTEGER,             -- "bfc", "malloc", "cuda"…
  kind TEXT,                     -- summary | alloc | free | histogram
  count INTEGER, bytes INTEGER, time_ns INTEGER,
  in_use INTEGER, peak INTEGER, size_class INTEGER);

-- Shared objects loaded (every object the loader maps, from la_objopen).
CREATE TABLE IF NOT EXISTS libraries (run_id INTEGER, path_id INTEGER, base INTEGER,
  size INTEGER, open_ns INTEGER, mapped_ns INTEGER, end_ns INTEGER,
  reloc_ns INTEGER, ctor_ns INTEGER, depth INTEGER, via TEXT);
-- File I/O per path.
CREATE TABLE IF NOT EXISTS io (run_id INTEGER, tid INTEGER, path_id INTEGER, op TEXT,
  calls INTEGER, bytes INTEGER, time_ns INTEGER, small_calls INTEGER);

-- CPU samples: a frame tree (stacks) and samples pointing at its leaves.
CREATE TABLE IF NOT EXISTS frames (run_id INTEGER, id INTEGER, ip INTEGER,
  symbol_id INTEGER, module_id INTEGER, PRIMARY KEY (run_id, id));
CREATE TABLE IF NOT EXISTS stacks (run_id INTEGER, id INTEGER, parent INTEGER,
  frame INTEGER, PRIMARY KEY (run_id, id));
CREATE TABLE IF NOT EXISTS samples (run_id INTEGER, tid INTEGER, ts_ns INTEGER, stack INTEGER);

-- GPU activity (CUPTI), after Nsight Systems' export: one row per record.
CREATE TABLE IF NOT EXISTS gpu_activity (run_id INTEGER,
  kind TEXT,                     -- kernel | memcpy | memset | runtime | driver | sync | overhead | marker
  start_ns INTEGER, end_ns INTEGER,
  device INTEGER, context INTEGER, stream INTEGER, correlation_id INTEGER,
  name_id INTEGER,
  grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
  block_x INTEGER, block_y INTEGER, block_z INTEGER,
  bytes INTEGER, copy_kind TEXT, src_kind TEXT, dst_kind TEXT,
  external_id INTEGER, tid INTEGER);
CREATE TABLE IF NOT EXISTS gpu_status (run_id INTEGER, available INTEGER, reason TEXT,
  records_dropped INTEGER, clock_offset_ns INTEGER);

-- Diagnostics output.
CREATE TABLE IF NOT EXISTS findings (id INTEGER PRIMARY KEY, run_id INTEGER,
  rule TEXT, severity TEXT,      -- info | moderate | high
  score REAL, title TEXT, evidence TEXT, fix TEXT);

-- Convenience views over interned names.
CREATE VIEW IF NOT EXISTS spans_v AS
  SELECT s.*, k.name AS kind_name, n.value AS name
  FROM spans s JOIN phase_kinds k ON k.id = s.kind LEFT JOIN strings n ON n.id = s.name_id;
CREATE VIEW IF NOT EXISTS ops_v AS
  SELECT o.*, n.value AS name, t.value AS type
  FROM ops o LEFT JOIN strings n ON n.id = o.name_id LEFT JOIN strings t ON t.id = o.type_id;

-- Communication calls (MPI through PMPI, torch.distributed through the Python
-- adapter): one row per call, beside its comm / comm_init span.
-- bytes: what this rank contributes (send count x type size; for
-- point-to-point the message); peer: destination or requested source, -1 for
-- collectives and waits; comm_size: ranks in the communicator, -1 if unknown.
CREATE TABLE IF NOT EXISTS comm (run_id INTEGER, tid INTEGER, op_id INTEGER,
  start_ns INTEGER, end_ns INTEGER, bytes INTEGER, peer INTEGER, comm_size INTEGER);

-- Short leaf spans of the high-volume kinds (op, span) beyond the first
-- 10,000 of a (thread, kind, name), folded into one row per parent span,
-- kind and name (schema version 2). `record --keep-all-spans` keeps a
-- spans row for every span instead.
CREATE TABLE IF NOT EXISTS span_groups (run_id INTEGER, tid INTEGER, kind INTEGER,
  name_id INTEGER, parent_id INTEGER, depth INTEGER, step INTEGER,
  count INTEGER, total_ns INTEGER, min_ns INTEGER, max_ns INTEGER,
  first_start_ns INTEGER, last_end_ns INTEGER);

-- Python frames seen in CPU samples (CPython 3.11): one row per distinct
-- (code object, line). The agent writes them; symbolisation turns the
-- samples' "p<id>" entries into `frames` rows with the same symbol/module.
CREATE TABLE IF NOT EXISTS py_frames (run_id INTEGER, id INTEGER, symbol_id INTEGER,
  module_id INTEGER, qualname_id INTEGER, line INTEGER);

-- Memory kept across steps (schema 3): at the end of each step, the agent's
-- live allocations of 64 KiB and more (every one, not a sample), grouped by
-- the Python frame that made them (the innermost frame outside the
-- interpreter's and installed packages' files, else the innermost; a
-- native-only allocation is its native caller). bytes/blocks: alive at the
-- step's end; new_bytes: of those, allocated during that step. At most the
-- 16 largest sites per step; the agent counts the rest in run_meta
-- agent.kept_sites_dropped.
CREATE TABLE IF NOT EXISTS step_kept (run_id INTEGER, step INTEGER, site_id INTEGER,
  py_frame INTEGER, bytes INTEGER, blocks INTEGER, new_bytes INTEGER);
