/*
 * fp8.pml -- a Promela model of TE main's ("upstream") FP8 ownership / autocast /
 * activation-checkpoint semantics, for measuring the explorer against SPIN side by side.
 *
 * Semantics: ../../docs/te-fp8-state-semantics.md, sections 2-3 (UPSTREAM column), with the
 * scenario language of ../../docs/scenarios.md.  One process generates every
 * well-formed program of up to DEPTH statements, token by token, and executes each token on the
 * model as it is generated (a prefix is executed once).  Every token is one d_step, so SPIN
 * stores exactly one state per program prefix boundary -- the granularity of `explorer --depth`.
 *
 * Statements (each costs 1 of the DEPTH budget, '}' is free):
 *   autocast on {   autocast off {   no_grad {   try {
 *   checkpoint reentrant {   checkpoint nonreentrant {   }
 *   linear L0 .. linear L(K-1)
 *   raise original | raise recompute      (only inside a checkpoint)
 *   recompute_uncaptured
 *   backward                               (top level: backward pass, ends the step)
 *   step                                   (top level: ends the step, no backward)
 * After a caught exception the rest of the try block is dead code in the forward; a recompute
 * replays it.  An uncaught exception ends the step.  No `save`, no `backward retain`.
 *
 * Checked: I1 (one forward update per step where the program without checkpoints makes one),
 * as the count of forward updates against the expected count; `-c0` counts violating steps.
 * Scratch used only inside one d_step is `hidden` (not stored).
 *
 * Build-time options:  -DDEPTH=n (default 6)  -DK=n modules (default 2)
 *   -DCLOSECOST      '}' also costs one statement of the budget
 *   -DSIMPLE_ASSERT  assert fwd <= 1 per step instead of I1
 *   -DNOASSERT       no assertion
 *   -DNOHIDDEN       scratch as ordinary (zeroed) state: needed for pan -DBFS / -DNCORE
 *   -DCHECKW         assert that the backward work tape never overflows (WMAX)
 */

#ifndef DEPTH
#define DEPTH 6
#endif
#ifndef K
#define K 2
#endif

#define MAXNEST  DEPTH
#define TMAX     DEPTH          /* forward tape: one node per linear / checkpoint statement */
#define LMAX     (2*DEPTH+1)    /* checkpoint-body log: statements + closes */
#ifdef NOHIDDEN                 /* SPIN refuses -DBFS and -DNCORE with hidden variables:  */
#define HIDDEN                  /* scratch becomes ordinary state, zeroed after each step */
#ifndef WMAX
#define WMAX     (3*DEPTH)
#endif
#else
#define HIDDEN   hidden
#ifndef WMAX
#define WMAX     128            /* backward work tape (hidden) */
#endif
#endif
#define SMAX     (DEPTH+2)      /* backward segment stack (hidden) */
#define FIFOMAX  30
#define STASHMAX 15

/* tokens */
#define T_ACON   1
#define T_ACOFF  2
#define T_NG     3
#define T_TRY    4
#define T_CKR    5
#define T_CKN    6
#define T_CLOSE  7
#define T_RAISEO 8
#define T_RAISER 9
#define T_RU     10
#define T_BWD    11
#define T_STEP   12
#define T_LIN    16             /* linear Lk = T_LIN + k */
#define TOKMASK  31
#define LG_NRFP8 32             /* log byte of a nonreentrant open: frame fp8 */
#define LG_RECOMP 64            /* log byte of a nonreentrant open: frame recomputed */
#define ISOPEN(t) ((t) >= T_ACON && (t) <= T_CKN)

/* block kinds (bk[i] = kind | aux << 3) */
#define K_ACON  1
#define K_ACOFF 2
#define K_NG    3
#define K_TRY   4
#define K_CKR   5
#define K_CKN   6

/* module flags */
#define MF_FP8 1
#define MF_REG 2
#define MF_POS 4
#define MF_UPD 8

/* tape node: na = ckr<<7 | owner<<6 | fp8<<5 | id ; nf = nonreentrant frame + 1 (0: none) */
#define N_CKR   128
#define N_OWNER 64
#define N_FP8   32

/* execution modes (hidden) */
#define M_FWD 0                 /* the step's forward: record on the tape */
#define M_CKR 1                 /* reentrant recompute: record on the sub-tape */
#define M_NR  2                 /* non-reentrant recompute: graph discarded */

/* ----------------------------------------------------------------- state */
bit  fp8;                       /* innermost autocast's enabled */
bit  F;                         /* is_first_fp8_module */
bit  grad = 1;                  /* torch grad mode */
bit  region;                    /* _IN_ACTIVATION_RECOMPUTE_REGION */
bit  phase;                     /* _ACTIVATION_RECOMPUTE_PHASE */
byte depth;                     /* autocast depth */
int  fifo;                      /* UPSTREAM ownership FIFO, bit i = entry i (front = bit 0) */
byte flen;
byte mfl[K];                    /* per-module flags */
byte mst[K];                    /* per-module stash deque length */
byte fwd, bwd, ex;              /* this step: forward/backward updates, expected forward updates (I1) */
byte n;                         /* statements generated so far */
byte nblk, nck, dead;           /* open live blocks, of which checkpoints; open dead blocks */
byte bk[MAXNEST], bv[MAXNEST];  /* block stack: kind|aux<<3, value (ckpt id / tape mark) */
byte tlen;
byte ta[TMAX], tf[TMAX];        /* tape */
byte llen;
byte lg[LMAX];                  /* checkpoint-body log (instance id = log position of its open) */

/* ------------------------------------------------ scratch (not stored) */
HIDDEN byte tok, cur, mode, exc, base, popped, ktop, top, kd, aux, vv, own, fr, i, j;
HIDDEN byte rptr, sk, inner, rtok, bwabort, gs, acf, acF, msave, sublo, sp, na, ctx, mk;
HIDDEN byte wlen, stepabort;
HIDDEN byte wa[WMAX], wf[WMAX];
HIDDEN byte slo[SMAX], spos[SMAX];

#ifdef NOHIDDEN
inline CLEAR_SCRATCH() {
  tok = 0; cur = 0; mode = 0; exc = 0; base = 0; popped = 0; ktop = 0; top = 0; kd = 0;
  aux = 0; vv = 0; own = 0; fr = 0; i = 0; j = 0; rptr = 0; sk = 0; inner = 0; rtok = 0;
  bwabort = 0; gs = 0; acf = 0; acF = 0; msave = 0; sublo = 0; sp = 0; na = 0; ctx = 0; mk = 0;
  wlen = 0; stepabort = 0
}
inline CLEAR_WORK() {             /* after a backward pass */
  j = 0;
  do
  :: j == WMAX -> break
  :: else -> wa[j] = 0; wf[j] = 0; j++
  od;
  j = 0;
  do
  :: j == SMAX -> break
  :: else -> slo[j] = 0; spos[j] = 0; j++
  od
}
#else
#define CLEAR_SCRATCH() skip
#define CLEAR_WORK() skip
#endif

/* ------------------------------------------------------------- helpers */
inline FIFO_PUSH(b) {
  if
  :: flen < FIFOMAX -> fifo = fifo | ((b) << flen); flen++
  :: else -> skip                 /* saturate (not reached at the depths used) */
  fi
}

inline LOG(t) {
  if
  :: llen < LMAX -> lg[llen] = t; llen++
  :: else -> skip
  fi
}

inline RECORD(a, f) {
  if
  :: mode == M_FWD ->
     if
     :: tlen < TMAX -> ta[tlen] = a; tf[tlen] = f; tlen++
     :: else -> skip
     fi
  :: mode == M_CKR ->
     if
     :: wlen < WMAX -> wa[wlen] = a; wf[wlen] = f; wlen++
     :: else ->
#ifdef CHECKW
        assert(0);                 /* work tape overflow */
#endif
        skip
     fi
  :: else -> skip                 /* non-reentrant recompute: graph discarded */
  fi
}

/* innermost live non-reentrant frame (+1, 0 = none) */
inline INNER_NR() {
  fr = 0; j = nblk;
  do
  :: j == 0 -> break
  :: else ->
     j--;
     if
     :: (bk[j] & 7) == K_CKN -> fr = bv[j] + 1; break
     :: else -> skip
     fi
  od
}

inline PUSH(k, a, v) {
  bk[nblk] = (k) | ((a) << 3); bv[nblk] = v; nblk++
}

/* exit of the innermost live block; xc: exceptional */
inline EXIT_TOP(xc) {
  top = nblk - 1; kd = bk[top] & 7; aux = bk[top] >> 3; vv = bv[top];
  bk[top] = 0; bv[top] = 0; nblk--;
  if
  :: kd == K_ACON || kd == K_ACOFF ->          /* AC_EXIT: fields,F := snap; depth-- ; update */
     fp8 = aux & 1; F = (aux >> 1) & 1; depth--;
     if
     :: kd == K_ACON && depth == 0 && grad -> fwd++; ex++
     :: else -> skip
     fi
  :: kd == K_NG -> grad = aux & 1
  :: kd == K_TRY ->
     if
     :: xc ->                                  /* caught: drop the graph recorded inside */
        if
        :: mode == M_FWD ->
           do
           :: tlen > vv -> tlen--; ta[tlen] = 0; tf[tlen] = 0
           :: else -> break
           od
        :: mode == M_CKR -> wlen = vv
        :: else -> skip
        fi
     :: else -> skip
     fi
  :: kd == K_CKR ->                            /* ARF_EXIT; grad pop; node if grad at call */
     nck--; region = 0; phase = 0; grad = aux & 1;
     if
     :: !xc && (aux & 1) -> INNER_NR(); RECORD(N_CKR | (fp8 << 5) | vv, fr)
     :: else -> skip
     fi
  :: kd == K_CKN -> nck--; region = 0; phase = 0
  :: else -> skip
  fi
}

/* module forward: prepare_forward, claim, end_forward */
inline MODFWD(k) {
  if
  :: (mfl[k] & MF_FP8) && phase ->             /* recompute branch: POP */
     mfl[k] = mfl[k] | MF_UPD;
     if
     :: !(mfl[k] & MF_POS) -> exc = 1          /* KeyError */
     :: else ->
        if
        :: mst[k] == 0 -> exc = 1              /* IndexError */
        :: else -> mst[k]--
        fi
     fi
  :: else ->                                   /* normal branch */
     if
     :: fp8 ->
        mfl[k] = mfl[k] | MF_FP8 | MF_REG;
        if
        :: region ->                           /* STASH (recompute_enabled = region && fp8) */
           if
           :: mst[k] < STASHMAX -> mst[k]++
           :: else -> skip
           fi;
           mfl[k] = mfl[k] | MF_POS
        :: else -> skip
        fi
     :: else -> mfl[k] = mfl[k] & 14
     fi
  fi;
  if
  :: !exc ->
     if
     :: grad ->                                /* CLAIM (upstream re-arm in phase) */
        own = 0;
        if
        :: (mfl[k] & MF_FP8) -> own = F; F = 0; if :: phase -> F = own :: else -> skip fi
        :: else -> skip
        fi;
        INNER_NR();
        RECORD((own << 6) | ((mfl[k] & MF_FP8) << 5) | (k), fr)
     :: else -> skip
     fi;
     if
     :: (mfl[k] & MF_FP8) && phase && !(mfl[k] & MF_UPD) -> exc = 1   /* RESTORE: KeyError */
     :: else -> skip
     fi
  :: else -> skip
  fi
}

/* execute one live token (forward or replay); cur = its log position */
inline EXEC() {
  if
  :: tok == T_ACON || tok == T_ACOFF ->        /* AC_ENTER */
     if
     :: tok == T_ACON -> kd = K_ACON
     :: else -> kd = K_ACOFF
     fi;
     PUSH(kd, fp8 | (F << 1), 0);
     fp8 = (kd == K_ACON);
     if :: depth == 0 -> F = 1 :: else -> skip fi;
     depth++
  :: tok == T_NG -> PUSH(K_NG, grad, 0); grad = 0
  :: tok == T_TRY ->
     if
     :: mode == M_FWD -> vv = tlen
     :: else -> vv = wlen
     fi;
     PUSH(K_TRY, 0, vv)
  :: tok == T_CKR ->                           /* CKR_FWD: grad off; ARF_ENTER(fwd) */
     PUSH(K_CKR, grad, cur); nck++; grad = 0;
     region = 1; phase = 0; FIFO_PUSH(F)
  :: tok == T_CKN ->                           /* NR_FWD: frame(fp8); ARF_ENTER(fwd) */
     PUSH(K_CKN, 0, cur); nck++;
     if
     :: mode != M_NR -> lg[cur] = T_CKN | (fp8 << 5)
     :: else -> skip
     fi;
     region = 1; phase = 0; FIFO_PUSH(F)
  :: tok == T_CLOSE -> EXIT_TOP(0)
  :: tok == T_RAISEO -> if :: mode == M_FWD -> exc = 1 :: else -> skip fi
  :: tok == T_RAISER -> if :: mode != M_FWD -> exc = 1 :: else -> skip fi
  :: tok == T_RU ->                            /* ARF_ENTER(rc) with nothing captured */
     region = 1; phase = 1;
     if
     :: flen == 0 -> exc = 1                   /* IndexError, flags leak */
     :: else -> F = fifo & 1; fifo = fifo >> 1; flen--; region = 0; phase = 0
     fi
  :: tok >= T_LIN -> MODFWD(tok - T_LIN)
  :: else -> skip
  fi
}

/* exception unwinding down to block level `b`; a try catches */
inline UNWIND(b) {
  popped = 0;
  do
  :: nblk == b -> break
  :: else ->
     ktop = bk[nblk - 1] & 7;
     EXIT_TOP(1); popped++;
     if
     :: ktop == K_TRY -> exc = 0; break
     :: else -> skip
     fi
  od
}

/* replay: skip the rest of the `popped` blocks just unwound */
inline SKIP() {
  sk = popped; inner = 0;
  do
  :: sk == 0 -> break
  :: else ->
     rtok = lg[rptr] & TOKMASK; rptr++;
     if
     :: ISOPEN(rtok) -> inner++
     :: rtok == T_CLOSE ->
        if :: inner > 0 -> inner-- :: else -> sk-- fi
     :: else -> skip
     fi
  od
}

/* replay the body of the checkpoint opened at log position p */
inline REPLAY(p) {
  rptr = (p) + 1; base = nblk;
  do
  :: exc -> break
  :: else ->
     rtok = lg[rptr] & TOKMASK;
     if
     :: rtok == T_CLOSE && nblk == base -> break
     :: else ->
        cur = rptr; rptr++; tok = rtok;
        EXEC();
        if
        :: exc ->
           UNWIND(base);
           if :: !exc -> SKIP() :: else -> skip fi
        :: else -> skip
        fi
     fi
  od
}

/* recompute: GRAD(on); ARF_ENTER(rc) pops the FIFO front; internal AC_ENTER(c);
   body; AC_EXIT (update at depth 0); ARF_EXIT; GRAD pop.  md: M_CKR / M_NR */
inline RECOMPUTE(p, c, md) {
  ctx = c; gs = grad; grad = 1;
  region = 1; phase = 1;
  if
  :: flen == 0 -> bwabort = 1; grad = gs          /* IndexError: flags leak */
  :: else ->
     F = fifo & 1; fifo = fifo >> 1; flen--;
     acf = fp8; acF = F; fp8 = ctx;
     if :: depth == 0 -> F = 1 :: else -> skip fi;
     depth++;
     msave = mode; mode = md;
     REPLAY(p);
     fp8 = acf; F = acF; depth--;
     if :: ctx && depth == 0 && grad -> fwd++ :: else -> skip fi;   /* recompute AC_EXIT updates (I1) */
     region = 0; phase = 0; grad = gs; mode = msave;
     if :: exc -> bwabort = 1; exc = 0 :: else -> skip fi
  fi
}

/* loss.backward(): reverse over the tape, reentrant nodes recompute and
   push their sub-tape, non-reentrant frames recompute at their first node */
inline BACKWARD() {
  wlen = 0;
  do
  :: wlen == tlen -> break
  :: else -> wa[wlen] = ta[wlen]; wf[wlen] = tf[wlen]; wlen++
  od;
  grad = 0; bwabort = 0; exc = 0; mode = M_FWD;
  sp = 0; slo[0] = 0; spos[0] = wlen;
  do
  :: bwabort -> break
  :: else ->
     if
     :: spos[sp] == slo[sp] ->
        if
        :: sp == 0 -> break
        :: else -> wlen = slo[sp]; sp--
        fi
     :: else ->
        spos[sp]--; i = spos[sp]; na = wa[i]; fr = wf[i];
        if
        :: fr > 0 && !(lg[fr - 1] & LG_RECOMP) ->
           mk = fr - 1;
           lg[mk] = lg[mk] | LG_RECOMP;
           RECOMPUTE(mk, (lg[mk] & LG_NRFP8) >> 5, M_NR)
        :: else -> skip
        fi;
        if
        :: bwabort -> skip
        :: else ->
           if
           :: (na & N_CKR) ->
              sublo = wlen;
              RECOMPUTE(na & TOKMASK, (na & N_FP8) >> 5, M_CKR);
              if
              :: !bwabort && sp + 1 < SMAX -> sp++; slo[sp] = sublo; spos[sp] = wlen
              :: else -> skip
              fi
           :: else ->
              if :: (na & N_OWNER) -> bwd++ :: else -> skip fi
           fi
        fi
     fi
  od;
  grad = 1; mode = M_FWD; exc = 0;
  CLEAR_WORK()
}

inline STEP_END() {
#if defined(SCRIPT)
  printf("STEP fwd=%d bwd=%d exp=%d\n", fwd, bwd, ex);
#elif defined(SIMPLE_ASSERT)
  assert(fwd <= 1);
#elif !defined(NOASSERT)
  assert(fwd == ex);                            /* I1 */
#endif
  fwd = 0; bwd = 0; ex = 0;
  do
  :: tlen == 0 -> break
  :: else -> tlen--; ta[tlen] = 0; tf[tlen] = 0
  od;
  do
  :: llen == 0 -> break
  :: else -> llen--; lg[llen] = 0
  od
}

/* one generated statement (or free close) in the forward */
inline GEN(t) {
  tok = t; mode = M_FWD; exc = 0;
#ifdef CLOSECOST
  n++;
#else
  if :: tok != T_CLOSE -> n++ :: else -> skip fi;
#endif
  if
  :: dead > 0 ->                               /* dead code after a caught raise */
     if :: nck > 0 -> LOG(tok) :: else -> skip fi;
     if
     :: ISOPEN(tok) -> dead++
     :: tok == T_CLOSE -> dead--
     :: else -> skip
     fi
  :: else ->
     if
     :: tok == T_CKR || tok == T_CKN || nck > 0 -> cur = llen; LOG(tok)
     :: else -> skip
     fi;
     EXEC();
     if
     :: exc ->
        UNWIND(0);
        if
        :: exc -> exc = 0; stepabort = 1; STEP_END()   /* uncaught: the step ends */
        :: else -> dead = popped               /* the unwound blocks stay open, as dead code */
        fi
     :: else -> skip
     fi
  fi
}

#define CANSTMT  (n < DEPTH)
#ifdef CLOSECOST
#define CANCLOSE (nblk + dead > 0 && n < DEPTH)
#else
#define CANCLOSE (nblk + dead > 0)
#endif
#define INCKPT   (nck > 0)
#define TOPLEVEL (nblk + dead == 0)

#ifndef SCRIPT
active proctype gen()
{
end:
  do
  :: d_step { CANSTMT -> GEN(T_ACON); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT -> GEN(T_ACOFF); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT -> GEN(T_NG); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT -> GEN(T_TRY); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT -> GEN(T_CKR); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT -> GEN(T_CKN); CLEAR_SCRATCH(); skip }
  :: d_step { CANCLOSE -> GEN(T_CLOSE); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT -> GEN(T_LIN + 0); CLEAR_SCRATCH(); skip }
#if K > 1
  :: d_step { CANSTMT -> GEN(T_LIN + 1); CLEAR_SCRATCH(); skip }
#endif
#if K > 2
  :: d_step { CANSTMT -> GEN(T_LIN + 2); CLEAR_SCRATCH(); skip }
#endif
  :: d_step { CANSTMT && INCKPT -> GEN(T_RAISEO); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT && INCKPT -> GEN(T_RAISER); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT -> GEN(T_RU); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT && TOPLEVEL -> n++; BACKWARD(); STEP_END(); CLEAR_SCRATCH(); skip }
  :: d_step { CANSTMT && TOPLEVEL -> n++; STEP_END(); CLEAR_SCRATCH(); skip }
  od
}
#else
#include "script.h"   /* defines NSCRIPT and SCRIPT_INIT (fills script[]); T_BWD / T_STEP end a step */
hidden byte script[NSCRIPT];
hidden byte si, skipping;
active proctype script_run()
{
  d_step {
  SCRIPT_INIT;
  si = 0; skipping = 0;
  do
  :: si == NSCRIPT -> break
  :: else ->
     tok = script[si]; si++;
     if
     :: skipping -> if :: tok == T_BWD || tok == T_STEP -> skipping = 0 :: else -> skip fi
     :: else ->
        if
        :: tok == T_BWD -> BACKWARD(); STEP_END()
        :: tok == T_STEP -> STEP_END()
        :: else ->
           stepabort = 0;
           GEN(tok);
           /* an uncaught forward exception already ended the step: skip to its end */
           if :: stepabort -> skipping = 1 :: else -> skip fi
        fi
     fi
  od;
  skip
  }
}
#endif
