/* graph.h - the wait-for graph and the per-rank timeline of a deadlock or
 * hang verdict, for the report's drawings.
 *
 * Sources, best first (docs/report.md, "Deadlock details"):
 *  graph     details.graph {nodes:[{id,rank,pid,label,state}],
 *            edges:[{from,to,label,cycle?}]}; else one node per entry of
 *            details.processes with edges read from the story (each line
 *            "global rank G (pid P ...) is blocked ..." names the processes
 *            it waits for by "(pid Q" or "[comm HASH rank R:"); else nothing.
 *  timeline  details.processes[].ops [{comm,op,peer,count,bytes,dtype,index,
 *            site,state,age_ms?}] (posting order, oldest first) as boxes in
 *            that order; else the findings and exits of each process over
 *            time.
 */
#ifndef A2A_TOOL_GRAPH_H
#define A2A_TOOL_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "job.h"

typedef struct rp_gnode {
  char id[64];
  int rank;                 /* -1 unknown */
  long long pid;            /* -1 unknown */
  char label[200];
  char state[24];           /* blocked|waiting|awaited|missing|exited|ok|... */
} rp_gnode;

typedef struct rp_gedge {
  int from, to;             /* node indexes */
  char label[160];
  bool cycle;
} rp_gedge;

typedef struct rp_graph {
  rp_gnode *n;
  size_t nn;
  rp_gedge *e;
  size_t ne;
  bool cycle;               /* details.cycle, or a cycle among the edges */
  const char *source;       /* "details.graph", "story", "processes" or NULL */
} rp_graph;

void rp_graph_build(const rp_job *j, const rp_finding *f, rp_graph *g);
void rp_graph_free(rp_graph *g);

typedef struct rp_titem {
  int row;
  double x;                 /* ms (timed) or position (0 = the last op) */
  char label[96];
  char state[24];
  char tip[400];
  int severity;             /* for finding items, else -1 */
} rp_titem;

typedef struct rp_trow {
  char label[64];
  int rank;
} rp_trow;

typedef struct rp_timeline {
  rp_trow *rows;
  size_t nrows;
  rp_titem *items;
  size_t nitems;
  bool timed;               /* x is in ms from the first item (findings);
                               else the position in posting order (ops) */
  const char *source;       /* "details.processes[].ops" or "findings" */
} rp_timeline;

/* f may be NULL (no deadlock): the findings timeline of the whole job. */
void rp_timeline_build(const rp_job *j, const rp_finding *f, rp_timeline *t);
void rp_timeline_free(rp_timeline *t);

/* The deadlock/hang finding the drawings are about (the first), or NULL. */
const rp_finding *rp_job_deadlock(const rp_job *j);
/* The occurrence whose details to draw from: the first with details.graph,
 * else with details.processes, else the first. */
const rp_occ *rp_deadlock_source(const rp_job *j, const rp_finding *f);

#endif /* A2A_TOOL_GRAPH_H */
