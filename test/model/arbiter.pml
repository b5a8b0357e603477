/* SPDX-License-Identifier: Apache-2.0 */
/* arbiter.pml - the exclusive-resource protocol of SPEC.md section 9 as a
 * SPIN model: N holders (3 unless -DN=), two agents (A owns the node lock
 * and dies at any point, B takes over after its full scan), one resource,
 * grants written to each holder's region, releases confirmed from the
 * holders' reports. check.sh runs every property below.
 *
 * Properties:
 *   safety    never two holders use the resource at once
 *   live0..2  a holder that always wants it uses it again and again, under
 *             weak fairness and -DFAIR_HOLDERS (holders take a grant up
 *             within the hold time; without it the take-up timeout can
 *             revoke each grant before its holder looks, and check.sh
 *             shows that starvation too)
 * Broken variants, which the checker must reject:
 *   -DBROKEN_REGRANT  the agent counts a revoked grant as released at once
 *   -DBROKEN_STALE    the agent accepts a release report that was made
 *                     before the holder saw the revocation
 *
 * Abstractions. A report carries the grant id it is about and whether the
 * holder's snapshot already showed that grant revoked ("saw"): that is
 * SPEC.md's seen_gen >= revoke_gen. Grant ids alternate 1, 2 per holder: a
 * report about a grant two grants back cannot still be the holder's last
 * (confirming the one in between needed a newer report). Time is gone:
 * "the turn is over" may happen at any agent tick after the take-up.
 * Holders always want the resource; they may stop using it and take the
 * same grant up again while it is live, and a lease lapse (once each)
 * voids the grant they held. Agent actions are atomic; holders interleave
 * with them freely.
 */

#ifndef N
#define N 3
#endif
#define IDLE 0
#define ACQUIRING 1
#define HOLDING 2
#define RELEASED 3

/* Each holder's region, written by the agent that owns the lock. */
byte gid[N];  /* the grant entry: 0 none, else 1 or 2 */
bool rev[N];  /* ... revoked */
byte lastid[N];

/* Each holder's state block (its reports), read by the agents. */
byte rstate[N];
byte rgid[N];
bool rsaw[N];

/* The resource, and who uses it. */
bool use[N];
byte users;

/* The node lock: 1 = A, 2 = B. B arbitrates only once ready (its full
 * scan since it took the lock). */
byte owner = 1;
bool ready = 1;
byte last = N - 1; /* round robin: the last holder granted */
bool lapsed[N];    /* a holder's lease lapsed once: it declines what it saw */
bool taken[N];     /* the owner's memory: a report showed the grant taken up */

/* The agents' scratch, used only inside their atomic steps: not state. */
hidden byte k, n, lv, j;
hidden byte pending;

ltl safety { [] (users <= 1) }
ltl live0 { [] <> use[0] }
ltl live1 { [] <> use[1] }
#if N > 2
ltl live2 { [] <> use[2] }
#endif

/* The holder loop of SPEC.md 9.4, always wanting the resource. held is the
 * grant it uses. */
proctype holder(byte i)
{
	byte sg, held = 0, vg = 0; /* vg: the grant a lapse voided */
	bool sr;
	do
	:: atomic { sg = gid[i]; sr = rev[i] };  /* procctl_grant_get */
		if
		:: sg == 0 -> vg = 0  /* dropped: whatever comes next is fresh */
		:: else -> skip
		fi;
		if
		:: held != 0 && (sg != held || sr) ->
			/* revoked (or gone): stop, then report the release */
			atomic { use[i] = 0; users-- };
			held = 0;
			atomic { rstate[i] = RELEASED; rgid[i] = sg; rsaw[i] = sr }
		:: held == 0 && sg != 0 && !sr && sg != vg ->
			/* usable: ACQUIRING first, then use it, then HOLDING */
			atomic { rstate[i] = ACQUIRING; rgid[i] = sg; rsaw[i] = 0 };
			held = sg;
			atomic { use[i] = 1; users++ };
			atomic { rstate[i] = HOLDING; rgid[i] = sg; rsaw[i] = 0 }
		:: held != 0 ->
			/* done for now, still wanting it: stop and report that; the
			 * same grant is usable again until it is revoked */
			atomic { use[i] = 0; users-- };
			held = 0;
			atomic { rstate[i] = RELEASED; rgid[i] = sg; rsaw[i] = sr }
		:: held != 0 && !lapsed[i] ->
			/* its lease lapses (once): it stops and declines the grant */
			lapsed[i] = 1;
			vg = held;
			atomic { use[i] = 0; users-- };
			held = 0;
			atomic { rstate[i] = RELEASED; rgid[i] = sg; rsaw[i] = sr }
		:: else ->
			/* report what it does, with the grant it saw */
			atomic {
				rstate[i] = (held != 0 -> HOLDING : (sg != 0 -> RELEASED : IDLE));
				rgid[i] = sg;
				rsaw[i] = sr
			}
		fi
	od
}

/* Count the live (not revoked) grants; the last one found in lv. */
inline live_grants(n, lv)
{
	n = 0;
	k = 0;
	do
	:: k < N -> if :: gid[k] != 0 && !rev[k] -> n++; lv = k :: else -> skip fi; k++
	:: else -> break
	od
}

/* The agent's tick for the one resource (SPEC.md 9.2, 9.5, 9.6). */
proctype agent(byte me)
{
	do
	:: atomic {
		owner == me && !ready ->
		ready = 1 /* B's full scan, begun after it took the lock */
	   }
	:: atomic {
		owner == me && ready ->
		/* 1. Confirm releases: a report about the revoked grant, made
		 * after the holder saw the revocation (or, broken: any). */
		k = 0;
		pending = 0;
		do
		:: k < N ->
			if
			:: gid[k] != 0 && rev[k] ->
				if
#ifdef BROKEN_STALE
				:: rgid[k] == gid[k] && (rstate[k] == IDLE || rstate[k] == RELEASED) ->
#else
				:: rgid[k] == gid[k] && rsaw[k] && (rstate[k] == IDLE || rstate[k] == RELEASED) ->
#endif
					gid[k] = 0;
					rev[k] = 0;
					taken[k] = 0
				:: else -> pending = 1
				fi
			:: else -> skip
			fi;
			k++
		:: else -> break
		od;
#ifdef BROKEN_REGRANT
		pending = 0;
#endif
		live_grants(n, lv);
		/* 2. Several live grants (adopted): revoke them all. */
		if
		:: n > 1 ->
			k = 0;
			do
			:: k < N -> if :: gid[k] != 0 -> rev[k] = 1 :: else -> skip fi; k++
			:: else -> break
			od
		/* 3. One holder (and everyone wants, always): its turn starts
		 * when a report shows it took the grant up. The grant is taken
		 * back when the turn is over (any tick after, as the agent may
		 * be scheduled late), when the holder declined it (a report
		 * about it, not using it), or when it was not taken up within
		 * the hold time: a timeout that liveness assumes away
		 * (FAIR_HOLDERS: holders take a grant up in time). */
		:: n == 1 ->
			if
			:: rgid[lv] == gid[lv] && (rstate[lv] == ACQUIRING || rstate[lv] == HOLDING) ->
				taken[lv] = 1
			:: else -> skip
			fi;
			if
			:: taken[lv] -> rev[lv] = 1
			:: rgid[lv] == gid[lv] && (rstate[lv] == IDLE || rstate[lv] == RELEASED) -> rev[lv] = 1
#ifndef FAIR_HOLDERS
			:: rev[lv] = 1
#endif
			:: else -> skip
			fi
		/* 4. Free: no grant live or pending (a report of use without a
		 * grant is nobody's holding, SPEC.md 9.6): the next holder after
		 * the last one gets a fresh grant. */
		:: n == 0 && !pending ->
			j = (last + 1) % N;
			if
			:: gid[j] != 0 -> skip /* its own old grant: confirmation comes first */
			:: else ->
				lastid[j] = (lastid[j] == 1 -> 2 : 1);
				gid[j] = lastid[j];
				rev[j] = 0;
				taken[j] = 0
			fi;
			last = j
		:: else -> skip
		fi
	   }
	od
}

/* A dies at any moment: the lock is B's; B is not ready until its scan. */
active proctype crash()
{
	atomic {
		owner == 1 -> owner = 2; ready = 0;
		k = 0; /* B knows nothing A saw */
		do
		:: k < N -> taken[k] = 0; k++
		:: else -> break
		od
	}
}

init
{
	atomic {
		k = 0;
		do
		:: k < N -> run holder(k); k++
		:: else -> break
		od;
		run agent(1);
		run agent(2)
	}
}
