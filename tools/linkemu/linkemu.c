/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* twoflow-linkemu: a userspace WAN link emulator.
 *
 * Bridges two network interfaces (normally veths in a router namespace) with
 * AF_PACKET sockets. Each direction is an emulated bottleneck (see link.h):
 * rate with an optional schedule, queue limit, drop-tail or RED, random and
 * Gilbert-Elliott loss, and per-port propagation delay classes. One thread,
 * epoll + timerfd (absolute CLOCK_MONOTONIC deadlines, no busy waiting).
 *
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#define _GNU_SOURCE
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define BATCH 64
#define MAX_GROUPS 64
#define MAX_PACKETS_DEFAULT 131072
#define MAX_CONFIG_DEPTH 4

enum
{ DIR_FWD = 0, DIR_REV = 1, N_DIRS = 2 };
static const char *dir_names[N_DIRS] = { "fwd", "rev" };

typedef struct
{
  uint16_t lo, hi;
} PortRange;

typedef struct
{
  PortRange ports;
  uint64_t delay_ns;
} DelayClassSpec;

typedef struct
{
  /* configuration */
  char *iface[2];
  double duration_s;
  char *csv_path;
  char *summary_path;
  uint64_t interval_ns;
  uint64_t seed;
  int rt_prio;
  int quiet;
  uint32_t max_packets;
  LeLinkConfig cfg[N_DIRS];
  int n_dclass[N_DIRS];
  DelayClassSpec dclass[N_DIRS][LE_MAX_CLASSES];
  int n_groups;
  PortRange groups[MAX_GROUPS];
  int scope;                    /* bit mask of directions options apply to */
  int queue_pkts_set[N_DIRS];

  /* runtime */
  LeLink link[N_DIRS];
  uint8_t class_of_port[N_DIRS][65536];
  uint16_t flow_of_port[65536];
  int sock[2];
  int ifindex[2];
  FILE *csv;
  LePacket *pool;
  uint32_t n_alloc;
  uint64_t pool_exhausted;
  uint64_t oversize[2];
  uint64_t tx_errors[2];
  uint64_t start;
} Emu;

static void die (const char *fmt, ...) __attribute__((format (printf, 1, 2),
        noreturn));

static void
die (const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  fprintf (stderr, "twoflow-linkemu: ");
  vfprintf (stderr, fmt, ap);
  fprintf (stderr, "\n");
  va_end (ap);
  exit (2);
}

static uint64_t
now_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* ---------------------------------------------------------------------- */
/* option parsing */

enum
{
  OPT_IFACE_A = 1, OPT_IFACE_B, OPT_DURATION, OPT_CSV, OPT_INTERVAL,
  OPT_SUMMARY, OPT_SEED, OPT_TRACK, OPT_CONFIG, OPT_REALTIME, OPT_QUIET,
  OPT_MAX_PACKETS, OPT_HELP, OPT_VERSION,
  OPT_DIR, OPT_RATE, OPT_DELAY, OPT_DELAY_CLASS, OPT_JITTER,
  OPT_INGRESS_JITTER, OPT_QUEUE, OPT_QUEUE_BYTES,
  OPT_RED, OPT_RED_GENTLE, OPT_RED_ECN, OPT_RED_MEAN_PKT, OPT_LOSS, OPT_DROP_NTH, OPT_GE,
  OPT_SCHEDULE,
  OPT_OVERHEAD
};

typedef struct
{
  const char *name;
  char short_name;
  int has_arg;
  int id;
  const char *arg;
  const char *help;
} Option;

static const Option options[] = {
  {"iface-a", 'a', 1, OPT_IFACE_A, "IF",
      "first interface (server side); fwd = a -> b"},
  {"iface-b", 'b', 1, OPT_IFACE_B, "IF",
      "second interface (client side); rev = b -> a"},
  {"duration", 't', 1, OPT_DURATION, "SEC",
      "stop after SEC seconds (default: run until SIGINT/SIGTERM)"},
  {"csv", 'o', 1, OPT_CSV, "FILE", "write the time series to FILE (- = stdout)"},
  {"interval", 'i', 1, OPT_INTERVAL, "MS",
      "time series resolution in ms (default 100)"},
  {"summary", 'S', 1, OPT_SUMMARY, "FILE",
      "write the exit summary as JSON to FILE"},
  {"seed", 's', 1, OPT_SEED, "N", "random seed (default 1)"},
  {"track", 0, 1, OPT_TRACK, "PORTS",
      "count a flow group by port or range LO-HI (repeatable)"},
  {"config", 'c', 1, OPT_CONFIG, "FILE",
      "read options from FILE: one 'option [value]' a line, # comments"},
  {"realtime", 0, 1, OPT_REALTIME, "PRIO",
      "run with SCHED_FIFO priority PRIO (0 = off, default)"},
  {"max-packets", 0, 1, OPT_MAX_PACKETS, "N",
      "packet buffers in flight at most (default 131072)"},
  {"quiet", 'q', 0, OPT_QUIET, NULL, "no summary on stderr"},
  {"help", 'h', 0, OPT_HELP, NULL, "this help"},
  {"version", 'V', 0, OPT_VERSION, NULL, "print the version"},
  {"dir", 'D', 1, OPT_DIR, "fwd|rev|both",
      "direction the following link options apply to (default both)"},
  {"rate", 'r', 1, OPT_RATE, "RATE",
      "bottleneck rate in bit/s, suffix k/M/G; 0 = outage; inf (default)"},
  {"delay", 'd', 1, OPT_DELAY, "MS", "default one-way propagation delay"},
  {"delay-class", 'p', 1, OPT_DELAY_CLASS, "PORTS=MS",
      "one-way delay for TCP/UDP packets whose destination or source port "
        "is PORTS (a port or LO-HI); repeatable, first match wins"},
  {"jitter", 'j', 1, OPT_JITTER, "MS",
      "extra delay per packet, uniform in [0, MS] (no reordering within a "
        "delay class); about one packet time at the rate breaks drop-tail "
        "phase effects (default 0)"},
  {"ingress-jitter", 0, 1, OPT_INGRESS_JITTER, "MS",
      "each packet enters the queue (loss, AQM and limit decided then) "
        "uniform [0, MS] after it arrived, in order within a delay class: "
        "reception latency, breaks phase effects but keeps the serializer's "
        "spacing (default 0)"},
  {"queue", 'Q', 1, OPT_QUEUE, "PKTS",
      "queue limit in packets, excluding the one on the wire (default 1000; "
        "0 = none)"},
  {"queue-bytes", 0, 1, OPT_QUEUE_BYTES, "BYTES",
      "queue limit in bytes (frame lengths); alone it replaces --queue"},
  {"red", 0, 1, OPT_RED, "MIN,MAX,W,MAXP",
      "RED (ns-2): thresholds (packets, or bytes with a byte-only limit), "
        "queue weight, max drop probability"},
  {"red-gentle", 0, 0, OPT_RED_GENTLE, NULL,
      "RED gentle mode: drop probability ramps MAXP..1 from MAX to 2*MAX"},
  {"red-ecn", 0, 0, OPT_RED_ECN, NULL,
      "RED marks ECN-capable (ECT) IP packets CE instead of dropping them "
        "early (RFC 3168); forced drops and the queue limit still drop "
        "(default off)"},
  {"red-mean-pkt", 0, 1, OPT_RED_MEAN_PKT, "BYTES",
      "RED mean packet size for the idle decay (default 1000)"},
  {"loss", 'l', 1, OPT_LOSS, "P", "random loss probability (0..1)"},
  {"drop-nth", 0, 1, OPT_DROP_NTH, "N",
      "drop exactly the Nth packet of 500 bytes or more (a single loss)"},
  {"ge", 0, 1, OPT_GE, "P,R[,LB[,LG]]",
      "Gilbert-Elliott burst loss: P(good->bad), P(bad->good) per packet, "
        "loss in bad (default 1) and good (default 0) state"},
  {"schedule", 0, 1, OPT_SCHEDULE, "T=RATE[,T=RATE...]",
      "rate changes at T seconds after start (e.g. 5=0,8=10M: 3 s outage)"},
  {"overhead", 0, 1, OPT_OVERHEAD, "BYTES",
      "bytes added to each frame for the rate (e.g. 24: preamble+FCS+IFG)"},
  {NULL, 0, 0, 0, NULL, NULL}
};

static void
usage (FILE * f)
{
  const Option *o;

  fprintf (f,
      "Usage: twoflow-linkemu -a IF -b IF [options] [--dir fwd|rev|both "
      "link-options]...\n\n"
      "Emulates a bottleneck link between two interfaces with AF_PACKET "
      "sockets (run as\nroot, normally inside a router network namespace). "
      "Each direction has a rate,\nqueue, AQM, loss and delay; link options "
      "apply to the directions selected by the\nlast --dir (both at first). "
      "fwd is a -> b, rev is b -> a.\n\nOptions:\n");
  for (o = options; o->name; o++) {
    char left[64];

    if (o->id == OPT_DIR)
      fprintf (f, "\nLink options (per direction):\n");
    snprintf (left, sizeof (left), "%c%c%s--%s%s%s",
        o->short_name ? '-' : ' ', o->short_name ? o->short_name : ' ',
        o->short_name ? ", " : "  ", o->name, o->arg ? " " : "",
        o->arg ? o->arg : "");
    fprintf (f, "  %-28s %s\n", left, o->help);
  }
  fprintf (f,
      "\nPipeline per direction: (ingress jitter ->) loss -> RED/drop-tail "
      "-> FIFO ->\nserializer at RATE -> delay line of the packet's class "
      "(+ jitter). The rate\ncounts whole Ethernet frames (header included) "
      "plus --overhead.\n\n"
      "Time series (--csv): one row per direction and interval: time_s, dir, "
      "rate_bps,\nqueue_pkts, queue_bytes, queue_max_pkts, red_avg, "
      "arrived_pkts, delivered_pkts,\ndelivered_bytes, drops_queue, "
      "drops_red_early, drops_red_forced, drops_loss, then\nbytes_<group> "
      "and drops_<group> per flow group (delay-class and --track ports;\n"
      "'other' last), then marks_red and marks_<group> (CE marks, --red-ecn).  "
      "Counts are per interval; queue_* are sampled at the end of it.\n\n"
      "Example (10 Mbit/s, 80-packet drop-tail queue, RTT 30 ms for port "
      "5201, 90 ms\nfor 5202; unlimited ACK path with the same delays):\n"
      "  twoflow-linkemu -a srv -b cli --delay 15 --delay-class 5201=15 "
      "--delay-class 5202=45 \\\n"
      "      --dir fwd --rate 10M --queue 80 --csv ts.csv --duration 40\n");
}

static int
parse_double (const char *s, double *out)
{
  char *end;

  errno = 0;
  *out = strtod (s, &end);
  return errno == 0 && end != s && *end == '\0';
}

static int
parse_u64 (const char *s, uint64_t * out)
{
  char *end;

  errno = 0;
  *out = strtoull (s, &end, 10);
  return errno == 0 && end != s && *end == '\0' && s[0] != '-';
}

/* "10M", "1.5Gbit", "250k", "0", "inf" -> bit/s */
static int
parse_rate (const char *s, uint64_t * out)
{
  char *end;
  double v;

  if (!strcmp (s, "inf") || !strcmp (s, "unlimited")) {
    *out = LE_RATE_UNLIMITED;
    return 1;
  }
  errno = 0;
  v = strtod (s, &end);
  if (errno || end == s || v < 0)
    return 0;
  switch (*end) {
    case 'k':
    case 'K':
      v *= 1e3;
      end++;
      break;
    case 'm':
    case 'M':
      v *= 1e6;
      end++;
      break;
    case 'g':
    case 'G':
      v *= 1e9;
      end++;
      break;
    default:
      break;
  }
  if (*end && strcmp (end, "bit") && strcmp (end, "bps") && strcmp (end, "b"))
    return 0;
  if (v >= 1.8e19)
    return 0;
  *out = (uint64_t) (v + 0.5);
  return 1;
}

static int
parse_ports (const char *s, PortRange * r)
{
  unsigned lo, hi;
  char c;

  if (sscanf (s, "%u-%u%c", &lo, &hi, &c) == 2) {
  } else if (sscanf (s, "%u%c", &lo, &c) == 1) {
    hi = lo;
  } else {
    return 0;
  }
  if (lo < 1 || hi > 65535 || lo > hi)
    return 0;
  r->lo = lo;
  r->hi = hi;
  return 1;
}

static void
add_group (Emu * e, PortRange r)
{
  int i;

  for (i = 0; i < e->n_groups; i++)
    if (e->groups[i].lo == r.lo && e->groups[i].hi == r.hi)
      return;
  if (e->n_groups >= MAX_GROUPS)
    die ("too many flow groups (max %d)", MAX_GROUPS);
  e->groups[e->n_groups++] = r;
}

static void parse_args (Emu * e, int argc, char **argv, int depth);

static void
read_config (Emu * e, const char *path, int depth)
{
  FILE *f;
  char line[1024];
  int lineno = 0;

  if (depth >= MAX_CONFIG_DEPTH)
    die ("%s: config files nested too deep", path);
  f = fopen (path, "r");
  if (!f)
    die ("%s: %s", path, strerror (errno));
  while (fgets (line, sizeof (line), f)) {
    char *p = line, *key, *val, *argv[3];
    char opt[128];
    int n;

    lineno++;
    if ((key = strchr (p, '#')))
      *key = '\0';
    key = strtok (p, " \t\r\n");
    if (!key)
      continue;
    val = strtok (NULL, "\r\n");
    while (val && (*val == ' ' || *val == '\t'))
      val++;
    if (val) {
      char *t = val + strlen (val);
      while (t > val && (t[-1] == ' ' || t[-1] == '\t'))
        *--t = '\0';
      if (!*val)
        val = NULL;
    }
    snprintf (opt, sizeof (opt), "--%s", key[0] == '-' ? key + 2 : key);
    argv[0] = (char *) path;
    argv[1] = opt;
    argv[2] = val;
    n = val ? 3 : 2;
    parse_args (e, n, argv, depth + 1);
  }
  fclose (f);
}

static void
apply_link_opt (Emu * e, const Option * o, const char *val)
{
  int d;

  for (d = 0; d < N_DIRS; d++) {
    LeLinkConfig *c = &e->cfg[d];
    double x;
    uint64_t u;

    if (!(e->scope & (1 << d)))
      continue;
    switch (o->id) {
      case OPT_RATE:
        if (!parse_rate (val, &c->rate_bps))
          die ("bad rate '%s'", val);
        break;
      case OPT_DELAY:
        if (!parse_double (val, &x) || x < 0 || x > 1e6)
          die ("bad delay '%s'", val);
        c->delay_ns[0] = (uint64_t) (x * 1e6 + 0.5);
        break;
      case OPT_JITTER:
        if (!parse_double (val, &x) || x < 0 || x > 1e6)
          die ("bad jitter '%s'", val);
        c->jitter_ns = (uint64_t) (x * 1e6 + 0.5);
        break;
      case OPT_INGRESS_JITTER:
        if (!parse_double (val, &x) || x < 0 || x > 1e6)
          die ("bad ingress jitter '%s'", val);
        c->ingress_jitter_ns = (uint64_t) (x * 1e6 + 0.5);
        break;
      case OPT_DELAY_CLASS:{
        DelayClassSpec s;
        char buf[64], *eq;

        snprintf (buf, sizeof (buf), "%s", val);
        eq = strchr (buf, '=');
        if (!eq)
          die ("bad delay class '%s' (want PORTS=MS)", val);
        *eq = '\0';
        if (!parse_ports (buf, &s.ports) || !parse_double (eq + 1, &x)
            || x < 0 || x > 1e6)
          die ("bad delay class '%s'", val);
        s.delay_ns = (uint64_t) (x * 1e6 + 0.5);
        if (e->n_dclass[d] >= LE_MAX_CLASSES - 1)
          die ("too many delay classes");
        e->dclass[d][e->n_dclass[d]++] = s;
        add_group (e, s.ports);
        break;
      }
      case OPT_QUEUE:
        if (!parse_u64 (val, &u) || u > UINT32_MAX)
          die ("bad queue limit '%s'", val);
        c->limit_pkts = (uint32_t) u;
        e->queue_pkts_set[d] = 1;
        break;
      case OPT_QUEUE_BYTES:
        if (!parse_u64 (val, &u))
          die ("bad queue byte limit '%s'", val);
        c->limit_bytes = u;
        break;
      case OPT_RED:{
        double mn, mx, w, mp;
        char tail;

        if (sscanf (val, "%lf,%lf,%lf,%lf%c", &mn, &mx, &w, &mp, &tail) != 4
            || mn < 0 || mx <= mn || w <= 0 || w > 1 || mp < 0 || mp > 1)
          die ("bad RED parameters '%s' (want MIN,MAX,W,MAXP)", val);
        c->aqm = LE_AQM_RED;
        c->red_min = mn;
        c->red_max = mx;
        c->red_w = w;
        c->red_maxp = mp;
        break;
      }
      case OPT_RED_GENTLE:
        c->red_gentle = 1;
        break;
      case OPT_RED_ECN:
        c->red_ecn = 1;
        break;
      case OPT_RED_MEAN_PKT:
        if (!parse_u64 (val, &u) || u == 0 || u > 65536)
          die ("bad RED mean packet size '%s'", val);
        c->red_mean_pkt = (uint32_t) u;
        break;
      case OPT_LOSS:
        if (!parse_double (val, &x) || x < 0 || x > 1)
          die ("bad loss probability '%s'", val);
        c->loss = x;
        break;
      case OPT_DROP_NTH:
        if (!parse_u64 (val, &u) || u == 0)
          die ("bad packet number '%s'", val);
        c->drop_nth = u;
        break;
      case OPT_GE:{
        double p, r, lb = 1.0, lg = 0.0;
        int n = sscanf (val, "%lf,%lf,%lf,%lf", &p, &r, &lb, &lg);

        if (n < 2 || p < 0 || p > 1 || r < 0 || r > 1 || lb < 0 || lb > 1
            || lg < 0 || lg > 1)
          die ("bad Gilbert-Elliott parameters '%s' (want P,R[,LB[,LG]])",
              val);
        c->ge = 1;
        c->ge_p = p;
        c->ge_r = r;
        c->ge_loss_bad = lb;
        c->ge_loss_good = lg;
        break;
      }
      case OPT_SCHEDULE:{
        char buf[4096], *tok, *save = NULL;

        snprintf (buf, sizeof (buf), "%s", val);
        c->n_sched = 0;
        for (tok = strtok_r (buf, ", ", &save); tok;
            tok = strtok_r (NULL, ", ", &save)) {
          char *eq = strchr (tok, '=');
          LeSchedEntry *s;

          if (!eq)
            die ("bad schedule entry '%s' (want T=RATE)", tok);
          *eq = '\0';
          if (c->n_sched >= LE_MAX_SCHED)
            die ("schedule too long");
          s = &c->sched[c->n_sched];
          if (!parse_double (tok, &x) || x < 0 || !parse_rate (eq + 1,
                  &s->rate_bps))
            die ("bad schedule entry '%s=%s'", tok, eq + 1);
          s->at = (uint64_t) (x * 1e9 + 0.5);
          if (c->n_sched > 0 && s->at < c->sched[c->n_sched - 1].at)
            die ("schedule times must not decrease");
          c->n_sched++;
        }
        break;
      }
      case OPT_OVERHEAD:
        if (!parse_u64 (val, &u) || u > 1000)
          die ("bad overhead '%s'", val);
        c->overhead = (uint32_t) u;
        break;
      default:
        break;
    }
  }
}

static void
apply_opt (Emu * e, const Option * o, const char *val, int depth)
{
  double x;
  uint64_t u;

  switch (o->id) {
    case OPT_IFACE_A:
      free (e->iface[0]);
      e->iface[0] = strdup (val);
      break;
    case OPT_IFACE_B:
      free (e->iface[1]);
      e->iface[1] = strdup (val);
      break;
    case OPT_DURATION:
      if (!parse_double (val, &x) || x < 0)
        die ("bad duration '%s'", val);
      e->duration_s = x;
      break;
    case OPT_CSV:
      free (e->csv_path);
      e->csv_path = strdup (val);
      break;
    case OPT_INTERVAL:
      if (!parse_double (val, &x) || x < 1 || x > 60000)
        die ("bad interval '%s' (1..60000 ms)", val);
      e->interval_ns = (uint64_t) (x * 1e6);
      break;
    case OPT_SUMMARY:
      free (e->summary_path);
      e->summary_path = strdup (val);
      break;
    case OPT_SEED:
      if (!parse_u64 (val, &u))
        die ("bad seed '%s'", val);
      e->seed = u;
      break;
    case OPT_TRACK:{
      PortRange r;

      if (!parse_ports (val, &r))
        die ("bad port range '%s'", val);
      add_group (e, r);
      break;
    }
    case OPT_CONFIG:
      read_config (e, val, depth);
      break;
    case OPT_REALTIME:
      if (!parse_u64 (val, &u) || u > 99)
        die ("bad realtime priority '%s'", val);
      e->rt_prio = (int) u;
      break;
    case OPT_MAX_PACKETS:
      if (!parse_u64 (val, &u) || u < BATCH * 4 || u > 16000000)
        die ("bad max-packets '%s'", val);
      e->max_packets = (uint32_t) u;
      break;
    case OPT_QUIET:
      e->quiet = 1;
      break;
    case OPT_HELP:
      usage (stdout);
      exit (0);
    case OPT_VERSION:
#ifdef VERSION
      printf ("twoflow-linkemu %s\n", VERSION);
#else
      printf ("twoflow-linkemu\n");
#endif
      exit (0);
    case OPT_DIR:
      if (!strcmp (val, "fwd"))
        e->scope = 1 << DIR_FWD;
      else if (!strcmp (val, "rev"))
        e->scope = 1 << DIR_REV;
      else if (!strcmp (val, "both"))
        e->scope = (1 << DIR_FWD) | (1 << DIR_REV);
      else
        die ("bad direction '%s' (fwd, rev or both)", val);
      break;
    default:
      apply_link_opt (e, o, val);
      break;
  }
}

static void
parse_args (Emu * e, int argc, char **argv, int depth)
{
  int i;

  for (i = 1; i < argc; i++) {
    const char *arg = argv[i], *val = NULL;
    const Option *o;
    char name[64];

    if (arg[0] != '-' || arg[1] == '\0')
      die ("unexpected argument '%s' (see --help)", arg);
    if (arg[1] == '-') {
      const char *eq = strchr (arg + 2, '=');
      size_t n = eq ? (size_t) (eq - arg - 2) : strlen (arg + 2);

      if (n >= sizeof (name))
        die ("unknown option '%s'", arg);
      memcpy (name, arg + 2, n);
      name[n] = '\0';
      for (o = options; o->name; o++)
        if (!strcmp (o->name, name))
          break;
      if (eq)
        val = eq + 1;
    } else {
      for (o = options; o->name; o++)
        if (o->short_name && o->short_name == arg[1])
          break;
      if (o->name && arg[2])
        val = arg + 2;
    }
    if (!o->name)
      die ("unknown option '%s' (see --help)", arg);
    if (o->has_arg && !val) {
      if (i + 1 >= argc || !argv[i + 1])
        die ("option '%s' needs an argument %s", arg, o->arg);
      val = argv[++i];
    } else if (!o->has_arg && val) {
      die ("option '%s' takes no argument", arg);
    }
    apply_opt (e, o, val, depth);
  }
}

/* ---------------------------------------------------------------------- */
/* packets */

static LePacket *
pkt_alloc (Emu * e)
{
  LePacket *p = e->pool;

  if (p) {
    e->pool = p->next;
    return p;
  }
  if (e->n_alloc >= e->max_packets) {
    e->pool_exhausted++;
    return NULL;
  }
  p = malloc (sizeof (LePacket));
  if (!p)
    return NULL;
  e->n_alloc++;
  return p;
}

static void
pkt_free (LePacket * p, void *user_data)
{
  Emu *e = user_data;

  p->next = e->pool;
  e->pool = p;
}

/* Delay class and flow group by TCP/UDP port: destination port first. */
static void
classify (Emu * e, int dir, LePacket * p)
{
  const uint8_t *d = p->data;
  uint32_t off = 12, l4 = 0;
  uint16_t type;
  uint8_t proto = 0;

  p->dclass = 0;
  p->flow = e->n_groups;
  if (p->len < 14)
    return;
  type = (d[12] << 8) | d[13];
  if (type == 0x8100 && p->len >= 18) {
    off = 16;
    type = (d[16] << 8) | d[17];
  }
  off += 2;
  if (type == 0x0800 && p->len >= off + 20) {
    uint32_t ihl = (d[off] & 0x0f) * 4;
    uint16_t frag = ((d[off + 6] << 8) | d[off + 7]) & 0x1fff;

    proto = d[off + 9];
    if (frag != 0 || ihl < 20)
      return;
    l4 = off + ihl;
  } else if (type == 0x86dd && p->len >= off + 40) {
    proto = d[off + 6];
    l4 = off + 40;
  } else {
    return;
  }
  if ((proto == 6 || proto == 17) && p->len >= l4 + 4) {
    uint16_t sport = (d[l4] << 8) | d[l4 + 1];
    uint16_t dport = (d[l4 + 2] << 8) | d[l4 + 3];
    uint8_t c = e->class_of_port[dir][dport];
    uint16_t f = e->flow_of_port[dport];

    if (!c)
      c = e->class_of_port[dir][sport];
    if (f == e->n_groups)
      f = e->flow_of_port[sport];
    p->dclass = c;
    p->flow = f;
  }
}

/* ---------------------------------------------------------------------- */
/* I/O */

static int
open_iface (Emu * e, int i)
{
  struct sockaddr_ll sll;
  struct packet_mreq mr;
  int fd, one = 1, bufsz = 8 << 20;

  e->ifindex[i] = if_nametoindex (e->iface[i]);
  if (!e->ifindex[i])
    die ("interface %s: %s", e->iface[i], strerror (errno));
  fd = socket (AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
      htons (ETH_P_ALL));
  if (fd < 0)
    die ("AF_PACKET socket: %s (needs root / CAP_NET_RAW)", strerror (errno));
  /* frames we send must not come back to us */
  if (setsockopt (fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one,
          sizeof (one)) < 0)
    die ("PACKET_IGNORE_OUTGOING: %s", strerror (errno));
  /* the emulator is the qdisc */
  setsockopt (fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof (one));
  if (setsockopt (fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof (bufsz)) < 0)
    setsockopt (fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof (bufsz));
  if (setsockopt (fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsz, sizeof (bufsz)) < 0)
    setsockopt (fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof (bufsz));
  memset (&sll, 0, sizeof (sll));
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons (ETH_P_ALL);
  sll.sll_ifindex = e->ifindex[i];
  if (bind (fd, (struct sockaddr *) &sll, sizeof (sll)) < 0)
    die ("bind %s: %s", e->iface[i], strerror (errno));
  memset (&mr, 0, sizeof (mr));
  mr.mr_ifindex = e->ifindex[i];
  mr.mr_type = PACKET_MR_PROMISC;
  if (setsockopt (fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof (mr)) < 0)
    die ("promiscuous mode on %s: %s", e->iface[i], strerror (errno));
  return fd;
}

static void
flush_due (Emu * e, int dir, uint64_t now)
{
  int out = e->sock[dir == DIR_FWD ? 1 : 0];
  LePacket *pk[BATCH];
  struct mmsghdr msgs[BATCH];
  struct iovec iov[BATCH];
  LePacket *d;

  while ((d = le_link_pop_dropped (&e->link[dir])))
    pkt_free (d, e);
  for (;;) {
    int n = 0, sent = 0, i;

    while (n < BATCH && (pk[n] = le_link_pop_due (&e->link[dir], now))) {
      iov[n].iov_base = pk[n]->data;
      iov[n].iov_len = pk[n]->len;
      memset (&msgs[n], 0, sizeof (msgs[n]));
      msgs[n].msg_hdr.msg_iov = &iov[n];
      msgs[n].msg_hdr.msg_iovlen = 1;
      n++;
    }
    if (n == 0)
      return;
    while (sent < n) {
      int r = sendmmsg (out, msgs + sent, n - sent, 0);

      if (r < 0) {
        if (errno == EINTR)
          continue;
        /* full device backlog: the frame is lost like on a wire */
        e->tx_errors[dir]++;
        sent++;
      } else {
        sent += r;
      }
    }
    for (i = 0; i < n; i++)
      pkt_free (pk[i], e);
    if (n < BATCH)
      return;
  }
}

/* Reads what is waiting on interface i (bounded, so timers stay on time). */
static void
receive (Emu * e, int i)
{
  int dir = i == 0 ? DIR_FWD : DIR_REV;
  int round;

  for (round = 0; round < 8; round++) {
    LePacket *pk[BATCH];
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    int n = 0, r, k;
    uint64_t now;
    LeVerdict v;

    while (n < BATCH && (pk[n] = pkt_alloc (e))) {
      iov[n].iov_base = pk[n]->data;
      iov[n].iov_len = LE_PKT_CAP;
      memset (&msgs[n], 0, sizeof (msgs[n]));
      msgs[n].msg_hdr.msg_iov = &iov[n];
      msgs[n].msg_hdr.msg_iovlen = 1;
      n++;
    }
    if (n == 0) {
      /* no buffers: drain the socket so the kernel does not stall */
      char sink[LE_PKT_CAP];

      while (recv (e->sock[i], sink, sizeof (sink), MSG_DONTWAIT) > 0)
        e->pool_exhausted++;
      return;
    }
    r = recvmmsg (e->sock[i], msgs, n, MSG_DONTWAIT, NULL);
    now = now_ns ();
    for (k = 0; k < r; k++) {
      LePacket *p = pk[k];

      if (msgs[k].msg_hdr.msg_flags & MSG_TRUNC) {
        e->oversize[i]++;
        pkt_free (p, e);
        continue;
      }
      p->len = msgs[k].msg_len;
      classify (e, dir, p);
      v = le_link_enqueue (&e->link[dir], p, now);
      if (v != LE_VERDICT_QUEUED && v != LE_VERDICT_INGRESS)
        pkt_free (p, e);
    }
    for (k = r < 0 ? 0 : r; k < n; k++)
      pkt_free (pk[k], e);
    if (r > 0)
      flush_due (e, dir, now);
    if (r < n)
      return;
  }
}

/* ---------------------------------------------------------------------- */
/* output */

static void
group_name (const Emu * e, int g, char *buf, size_t n)
{
  if (g == e->n_groups)
    snprintf (buf, n, "other");
  else if (e->groups[g].lo == e->groups[g].hi)
    snprintf (buf, n, "%u", e->groups[g].lo);
  else
    snprintf (buf, n, "%u-%u", e->groups[g].lo, e->groups[g].hi);
}

static void
csv_header (Emu * e)
{
  char name[32];
  int g;

  fprintf (e->csv, "time_s,dir,rate_bps,queue_pkts,queue_bytes,"
      "queue_max_pkts,red_avg,arrived_pkts,delivered_pkts,delivered_bytes,"
      "drops_queue,drops_red_early,drops_red_forced,drops_loss");
  for (g = 0; g <= e->n_groups; g++) {
    group_name (e, g, name, sizeof (name));
    fprintf (e->csv, ",bytes_%s", name);
  }
  for (g = 0; g <= e->n_groups; g++) {
    group_name (e, g, name, sizeof (name));
    fprintf (e->csv, ",drops_%s", name);
  }
  /* (appended last, so older readers by position still work) */
  fprintf (e->csv, ",marks_red");
  for (g = 0; g <= e->n_groups; g++) {
    group_name (e, g, name, sizeof (name));
    fprintf (e->csv, ",marks_%s", name);
  }
  fprintf (e->csv, "\n");
  fflush (e->csv);
}

static void
csv_row (Emu * e, uint64_t t)
{
  int d, g;

  for (d = 0; d < N_DIRS; d++) {
    LeLink *l = &e->link[d];
    LeCounters *c = &l->interval;

    if (e->csv) {
      fprintf (e->csv, "%.3f,%s,", (t - e->start) / 1e9, dir_names[d]);
      if (l->rate_bps == LE_RATE_UNLIMITED)
        fprintf (e->csv, "inf");
      else
        fprintf (e->csv, "%" PRIu64, l->rate_bps);
      fprintf (e->csv, ",%u,%" PRIu64 ",%u,%.3f,%" PRIu64 ",%" PRIu64 ",%"
          PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, l->queue.n,
          l->queue_bytes, c->max_queue_pkts, l->red_avg, c->arrived_pkts,
          c->delivered_pkts, c->delivered_bytes, c->drops_queue,
          c->drops_red_early, c->drops_red_forced, c->drops_loss);
      for (g = 0; g <= e->n_groups; g++)
        fprintf (e->csv, ",%" PRIu64, l->flow_bytes_interval[g]);
      for (g = 0; g <= e->n_groups; g++)
        fprintf (e->csv, ",%" PRIu64, l->flow_drops_interval[g]);
      fprintf (e->csv, ",%" PRIu64, c->marks_red);
      for (g = 0; g <= e->n_groups; g++)
        fprintf (e->csv, ",%" PRIu64, l->flow_marks_interval[g]);
      fprintf (e->csv, "\n");
    }
    le_link_reset_interval (l);
  }
  if (e->csv)
    fflush (e->csv);
}

static uint64_t
socket_drops (int fd)
{
  struct tpacket_stats st;
  socklen_t len = sizeof (st);

  if (getsockopt (fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) < 0)
    return 0;
  return st.tp_drops;
}

static void
write_summary (Emu * e, uint64_t end)
{
  struct rusage ru;
  double wall = (end - e->start) / 1e9, user, sys;
  uint64_t sdrops[2];
  FILE *f = NULL;
  char name[32];
  int d, g;

  getrusage (RUSAGE_SELF, &ru);
  user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
  sdrops[0] = socket_drops (e->sock[0]);
  sdrops[1] = socket_drops (e->sock[1]);

  if (!e->quiet) {
    fprintf (stderr, "twoflow-linkemu: %.3f s, cpu %.3f s user + %.3f s "
        "sys, socket drops %s=%" PRIu64 " %s=%" PRIu64 "\n", wall, user,
        sys, e->iface[0], sdrops[0], e->iface[1], sdrops[1]);
    for (d = 0; d < N_DIRS; d++) {
      LeCounters *c = &e->link[d].total;

      fprintf (stderr, "  %s: arrived %" PRIu64 " pkts %" PRIu64 " B, "
          "delivered %" PRIu64 " pkts %" PRIu64 " B (%.3f Mbit/s), drops "
          "queue %" PRIu64 " red %" PRIu64 "+%" PRIu64 " loss %" PRIu64
          ", CE marks %" PRIu64 ", max queue %u pkts\n", dir_names[d],
          c->arrived_pkts, c->arrived_bytes, c->delivered_pkts,
          c->delivered_bytes,
          wall > 0 ? c->delivered_bytes * 8 / wall / 1e6 : 0.0,
          c->drops_queue, c->drops_red_early, c->drops_red_forced,
          c->drops_loss, c->marks_red, c->max_queue_pkts);
      for (g = 0; g <= e->n_groups; g++) {
        group_name (e, g, name, sizeof (name));
        fprintf (stderr, "    flow %s: %" PRIu64 " B (%.3f Mbit/s), %"
            PRIu64 " drops, %" PRIu64 " CE marks\n", name,
            e->link[d].flow_bytes_total[g],
            wall > 0 ? e->link[d].flow_bytes_total[g] * 8 / wall / 1e6 : 0.0,
            e->link[d].flow_drops_total[g], e->link[d].flow_marks_total[g]);
      }
    }
  }
  if (!e->summary_path)
    return;
  f = fopen (e->summary_path, "w");
  if (!f) {
    fprintf (stderr, "twoflow-linkemu: %s: %s\n", e->summary_path,
        strerror (errno));
    return;
  }
  fprintf (f, "{\n  \"start_monotonic_s\": %.9f,\n", e->start / 1e9);
  fprintf (f, "  \"duration_s\": %.6f,\n  \"cpu_user_s\": %.6f,\n"
      "  \"cpu_sys_s\": %.6f,\n  \"socket_drops\": [%" PRIu64 ", %" PRIu64
      "],\n  \"oversize\": [%" PRIu64 ", %" PRIu64 "],\n"
      "  \"buffers_exhausted\": %" PRIu64 ",\n  \"buffers_allocated\": %u",
      wall, user, sys, sdrops[0], sdrops[1], e->oversize[0], e->oversize[1],
      e->pool_exhausted, e->n_alloc);
  for (d = 0; d < N_DIRS; d++) {
    LeCounters *c = &e->link[d].total;

    fprintf (f, ",\n  \"%s\": {\n    \"arrived_pkts\": %" PRIu64
        ",\n    \"arrived_bytes\": %" PRIu64 ",\n    \"dequeued_pkts\": %"
        PRIu64 ",\n    \"delivered_pkts\": %" PRIu64
        ",\n    \"delivered_bytes\": %" PRIu64 ",\n    \"drops_queue\": %"
        PRIu64 ",\n    \"drops_red_early\": %" PRIu64
        ",\n    \"drops_red_forced\": %" PRIu64 ",\n    \"drops_loss\": %"
        PRIu64 ",\n    \"marks_red\": %" PRIu64 ",\n    \"tx_errors\": %" PRIu64 ",\n    \"max_queue_pkts\": %u"
        ",\n    \"max_queue_bytes\": %" PRIu64 ",\n    \"queue_pkts_at_exit\": %u"
        ",\n    \"flows\": {", dir_names[d], c->arrived_pkts, c->arrived_bytes,
        c->dequeued_pkts, c->delivered_pkts, c->delivered_bytes,
        c->drops_queue, c->drops_red_early, c->drops_red_forced,
        c->drops_loss, c->marks_red, e->tx_errors[d], c->max_queue_pkts,
        c->max_queue_bytes, e->link[d].queue.n);
    for (g = 0; g <= e->n_groups; g++) {
      group_name (e, g, name, sizeof (name));
      fprintf (f, "%s\n      \"%s\": {\"delivered_bytes\": %" PRIu64
          ", \"drops\": %" PRIu64 ", \"marks\": %" PRIu64 "}",
          g ? "," : "", name, e->link[d].flow_bytes_total[g],
          e->link[d].flow_drops_total[g], e->link[d].flow_marks_total[g]);
    }
    fprintf (f, "\n    }\n  }");
  }
  fprintf (f, "\n}\n");
  fclose (f);
}

/* ---------------------------------------------------------------------- */

static void
setup_tables (Emu * e)
{
  int d, g, k;
  unsigned p;

  for (p = 0; p < 65536; p++)
    e->flow_of_port[p] = e->n_groups;
  /* first group defined wins on overlap */
  for (g = e->n_groups - 1; g >= 0; g--)
    for (p = e->groups[g].lo; p <= e->groups[g].hi; p++)
      e->flow_of_port[p] = g;
  for (d = 0; d < N_DIRS; d++) {
    memset (e->class_of_port[d], 0, sizeof (e->class_of_port[d]));
    e->cfg[d].n_classes = e->n_dclass[d] + 1;
    for (k = e->n_dclass[d] - 1; k >= 0; k--) {
      DelayClassSpec *s = &e->dclass[d][k];

      e->cfg[d].delay_ns[k + 1] = s->delay_ns;
      for (p = s->ports.lo; p <= s->ports.hi; p++)
        e->class_of_port[d][p] = k + 1;
    }
  }
}

/* The options' defaults, before parse_args. */
static void
set_defaults (Emu * e)
{
  int d;

  e->interval_ns = 100 * 1000000ULL;
  e->seed = 1;
  e->max_packets = MAX_PACKETS_DEFAULT;
  e->scope = (1 << DIR_FWD) | (1 << DIR_REV);
  for (d = 0; d < N_DIRS; d++) {
    e->cfg[d].rate_bps = LE_RATE_UNLIMITED;
    e->cfg[d].limit_pkts = 1000;
    e->cfg[d].red_mean_pkt = 1000;
  }
}

/* The timer at @wake (at least 1 ns after @now); the time it is armed at. */
static uint64_t
arm_timer (int tfd, uint64_t wake, uint64_t now)
{
  struct itimerspec its;

  memset (&its, 0, sizeof (its));
  if (wake <= now)
    wake = now + 1;
  its.it_value.tv_sec = wake / 1000000000ULL;
  its.it_value.tv_nsec = wake % 1000000000ULL;
  timerfd_settime (tfd, TFD_TIMER_ABSTIME, &its, NULL);
  return wake;
}

/* At the end (a signal or --duration): what is due goes out, the last
 * CSV row and the summary are written, everything is freed. */
static void
finish (Emu * e, uint64_t end, uint64_t next_tick)
{
  uint64_t t = now_ns ();
  int d, i;

  if (t > end)
    t = end;
  for (d = 0; d < N_DIRS; d++) {
    le_link_advance (&e->link[d], t);
    flush_due (e, d, t);
  }
  if (t > next_tick - e->interval_ns)
    csv_row (e, t);
  write_summary (e, t);
  if (e->csv && e->csv != stdout)
    fclose (e->csv);
  for (d = 0; d < N_DIRS; d++)
    le_link_clear (&e->link[d], pkt_free, e);
  for (i = 0; i < 2; i++)
    close (e->sock[i]);
  while (e->pool) {
    LePacket *p = e->pool;
    e->pool = p->next;
    free (p);
  }
}

int
main (int argc, char **argv)
{
  static Emu emu;
  Emu *e = &emu;
  struct epoll_event ev, evs[8];
  sigset_t mask;
  int ep, tfd, sfd, d, i, stop = 0;
  uint64_t end = LE_TIME_NEVER, next_tick, armed = 0;

  set_defaults (e);
  parse_args (e, argc, argv, 0);
  if (argc < 2) {
    usage (stderr);
    return 2;
  }
  if (!e->iface[0] || !e->iface[1])
    die ("both --iface-a and --iface-b are needed (see --help)");
  /* a byte limit alone replaces the default packet limit */
  for (d = 0; d < N_DIRS; d++)
    if (e->cfg[d].limit_bytes && !e->queue_pkts_set[d])
      e->cfg[d].limit_pkts = 0;
  setup_tables (e);

  sigemptyset (&mask);
  sigaddset (&mask, SIGINT);
  sigaddset (&mask, SIGTERM);
  sigaddset (&mask, SIGHUP);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  signal (SIGPIPE, SIG_IGN);
  sfd = signalfd (-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  tfd = timerfd_create (CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  ep = epoll_create1 (EPOLL_CLOEXEC);
  if (sfd < 0 || tfd < 0 || ep < 0)
    die ("signalfd/timerfd/epoll: %s", strerror (errno));

  prctl (PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  if (e->rt_prio > 0) {
    struct sched_param sp = {.sched_priority = e->rt_prio };
    if (sched_setscheduler (0, SCHED_FIFO, &sp) < 0)
      fprintf (stderr, "twoflow-linkemu: SCHED_FIFO: %s (continuing)\n",
          strerror (errno));
  }

  for (i = 0; i < 2; i++)
    e->sock[i] = open_iface (e, i);

  if (e->csv_path) {
    e->csv = strcmp (e->csv_path, "-") ? fopen (e->csv_path, "w") : stdout;
    if (!e->csv)
      die ("%s: %s", e->csv_path, strerror (errno));
    csv_header (e);
  }

  /* drop whatever arrived before the configuration was in place */
  for (i = 0; i < 2; i++) {
    char sink[LE_PKT_CAP];
    while (recv (e->sock[i], sink, sizeof (sink), MSG_DONTWAIT) > 0);
  }

  e->start = now_ns ();
  for (d = 0; d < N_DIRS; d++)
    if (le_link_init (&e->link[d], &e->cfg[d], e->n_groups + 1,
            e->seed * 2 + d, e->start) < 0)
      die ("out of memory");
  if (e->duration_s > 0)
    end = e->start + (uint64_t) (e->duration_s * 1e9);
  next_tick = e->start + e->interval_ns;

  ev.events = EPOLLIN;
  for (i = 0; i < 2; i++) {
    ev.data.fd = e->sock[i];
    epoll_ctl (ep, EPOLL_CTL_ADD, e->sock[i], &ev);
  }
  ev.data.fd = tfd;
  epoll_ctl (ep, EPOLL_CTL_ADD, tfd, &ev);
  ev.data.fd = sfd;
  epoll_ctl (ep, EPOLL_CTL_ADD, sfd, &ev);

  while (!stop) {
    uint64_t now = now_ns (), wake;
    int n;

    if (now >= end)
      break;
    for (d = 0; d < N_DIRS; d++) {
      le_link_advance (&e->link[d], now);
      flush_due (e, d, now);
    }
    if (now >= next_tick) {
      csv_row (e, next_tick);
      next_tick += e->interval_ns;
      if (next_tick <= now)
        next_tick = now + e->interval_ns;
    }
    wake = next_tick < end ? next_tick : end;
    for (d = 0; d < N_DIRS; d++) {
      uint64_t w = le_link_next_wakeup (&e->link[d]);
      if (w < wake)
        wake = w;
    }
    if (wake != armed)
      armed = arm_timer (tfd, wake, now);
    n = epoll_wait (ep, evs, 8, -1);
    if (n < 0 && errno != EINTR)
      die ("epoll_wait: %s", strerror (errno));
    for (i = 0; i < n; i++) {
      int fd = evs[i].data.fd;

      if (fd == e->sock[0]) {
        receive (e, 0);
      } else if (fd == e->sock[1]) {
        receive (e, 1);
      } else if (fd == tfd) {
        uint64_t x;
        if (read (tfd, &x, sizeof (x)) < 0 && errno != EAGAIN)
          die ("timerfd: %s", strerror (errno));
        armed = 0;
      } else if (fd == sfd) {
        struct signalfd_siginfo si;
        if (read (sfd, &si, sizeof (si)) > 0)
          stop = 1;
      }
    }
  }

  finish (e, end, next_tick);
  return 0;
}
