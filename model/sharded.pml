/*
 * One namespace's registrations spread over shards (issue: a sharded namespace).
 *
 * N articles of one story: every pair is alike (or, with CHAIN, each article is alike to its
 * neighbours only), each pair alike shares one bucket, and each
 * bucket lives on a shard of its own (the worst case: no two of an article's buckets can be
 * read or written in one atomic call). A shard call is one atomic step; anything between two
 * calls may interleave with every other article and with a takedown.
 *
 * PROTOCOL 1 (the chosen one), per article:
 *   1. add itself to each of its buckets, one shard call each;
 *   2. in one call to the namespace's home shard: refuse a remembered deleted id; else, for an
 *      id seen before, its seq and stored verdict (a replay); else take the next seq from the
 *      counter and record id -> seq;
 *   3. read each of its buckets, one shard call each;
 *   4. in one call to the home shard, read the recorded seq of each article found; one is
 *      earlier iff it has a seq smaller than its own (none yet, or larger: later, ignored);
 *   5. store its verdict while id -> seq still names its seq (a takedown may have come
 *      between), first writer wins; publish what is stored.
 *   A crash can come after any call (CRASHES of them in all, of any articles, each at any
 *   point); the article is then delivered again from step 1.
 *
 * Articles are named by their ids in buckets. The code lists an 8-byte id hash instead, keyed
 * by a secret of the namespace and claimed by one id on the home shard before step 1 (a step
 * 0 that touches only the home shard and orders nothing here); step 2 then takes a seq only
 * while the id holds its hash, and step 4 reads the holder's seq. So an entry names exactly
 * one article, as here (model/README.md, "What the id hash must guarantee").
 *
 * PROTOCOL 2: protocol 1 with steps 1 and 2 swapped (the seq taken before the article is in
 * its buckets): a later seq can then read its buckets before an earlier one is in them.
 *
 * PROTOCOL 0 (the naive pairwise rule): 1. add to buckets; 2. read them; 3. once every
 * article alike has read, X is earlier than A iff A saw X and X did not see A, or both saw
 * each other and X has the smaller id.
 *
 * Invariants (asserted):
 *   - each verdict is the one deciding the articles one at a time in seq order gives: an
 *     original iff no article alike has a smaller seq, a copy's match alike and earlier (no
 *     cycle); so exactly one original in a story whose articles are all alike;
 *   - a replay gets the verdict first published;
 *   - an article read after a takedown was acknowledged never sees the taken-down article.
 */

#ifndef N
#define N 3
#endif
#ifndef PROTOCOL
#define PROTOCOL 1
#endif
#ifndef CRASHES
#define CRASHES 1          /* crashes in all, each of any article at any point, then a redelivery */
#endif
#ifndef TAKEDOWN
#define TAKEDOWN 0         /* 1: a takedown of article 0 races the registrations */
#endif
#ifndef CHAIN
#define CHAIN 0            /* 1: a chain story, article i alike only to i - 1 and i + 1 */
#endif

/* which pairs are alike (share a bucket) */
#define ALIKE(i, j) ((i) != (j) && (!CHAIN || (i) == (j) + 1 || (j) == (i) + 1))

#define PAIR(i, j) ((i) < (j) -> (i) * N + (j) : (j) * N + (i))
#define ORIGINAL 1
#define COPY_OF(k) ((k) + 2)
#define REFUSED 255

byte bucket[N * N];        /* bitmask of the articles in each pair's bucket */
byte counter;              /* the namespace's sequence counter (home shard) */
byte crashed;              /* crashes so far */
byte seq_of[N];            /* id -> seq, 0 when none (home shard) */
bool remembered[N];        /* deleted ids, remembered (home shard) */
byte stored[N];            /* verdict stored at the seq: 0 none, ORIGINAL, COPY_OF(k) */
byte published[N];         /* the first verdict published, 0 none */
bool finished[N];
bool acked[N];             /* the takedown of an article was acknowledged */
byte saw[N];               /* protocol 0: whom each article saw */
bool read_all[N];          /* protocol 0: it has read all its buckets */

inline crash_point() {
    if
    :: atomic { crashed < CRASHES -> crashed++ }; goto redelivered
    :: true
    fi
}

inline publish(v) {
    if
    :: published[me] == 0 ->
        published[me] = v;
        if
        :: v == ORIGINAL -> printf("@ article %d (seq %d): original\n", me, s)
        :: else -> printf("@ article %d (seq %d): copy of article %d\n", me, s, v - 2)
        fi
    :: else -> assert(published[me] == v)   /* a replay gets its first verdict */
    fi
}

/* 1. add itself to each bucket, a shard call each */
inline add_to_buckets() {
    k = 0;
    do
    :: k < N ->
        if
        :: ALIKE(me, k) -> bucket[PAIR(me, k)] = bucket[PAIR(me, k)] | (1 << me); crash_point()
        :: else
        fi;
        k++
    :: else -> break
    od
}

proctype Article(byte me) {
    byte k, s, v, found, best, best_seq;
redelivered:
#if PROTOCOL != 2
    add_to_buckets();
#endif
#if PROTOCOL != 0
    /* 2. home shard: refused, a replay, or the next seq */
    atomic {
        if
        :: remembered[me] -> v = REFUSED
        :: !remembered[me] && seq_of[me] != 0 -> s = seq_of[me]; v = stored[me]
        :: !remembered[me] && seq_of[me] == 0 -> counter++; s = counter; seq_of[me] = s; v = 0
        fi
    }
    if
    :: v == REFUSED -> goto done
    :: v != 0 -> publish(v); goto done
    :: else
    fi;
    crash_point();
#if PROTOCOL == 2
    add_to_buckets();   /* the wrong order: its seq taken before it is in its buckets */
#endif
    /* 3. read each bucket, a shard call each */
    found = 0;
    k = 0;
    do
    :: k < N ->
        if
        :: ALIKE(me, k) ->
            found = found | (bucket[PAIR(me, k)] & ~(1 << me));
            crash_point()
        :: else
        fi;
        k++
    :: else -> break
    od;
    /* 4. the recorded seqs of what it found, one call to the home shard: earlier iff
     * smaller than its own */
    atomic {
        best = N;
        best_seq = 255;
        k = 0;
        do
        :: k < N ->
            if
            :: (found & (1 << k)) != 0 && seq_of[k] != 0 && seq_of[k] < s ->
                assert(!acked[k]);  /* never a candidate once its takedown is acknowledged */
                if
                :: seq_of[k] < best_seq -> best = k; best_seq = seq_of[k]
                :: else
                fi
            :: else
            fi;
            k++
        :: else -> break
        od;
        k = 0;
        found = 0;
        best_seq = 0
    };
    v = (best == N -> ORIGINAL : COPY_OF(best));
    crash_point();
    /* 5. store while the seq is its id's (first writer wins), publish what is stored */
    atomic {
        if
        :: seq_of[me] == s && stored[me] == 0 -> stored[me] = v
        :: else
        fi;
        if
        :: seq_of[me] == s -> v = stored[me]
        :: else -> v = REFUSED   /* taken down meanwhile: nothing is published */
        fi
    }
    if
    :: v != REFUSED -> publish(v)
    :: else
    fi;
#else
    /* 2. read each bucket, a shard call each */
    found = 0;
    k = 0;
    do
    :: k < N ->
        if
        :: ALIKE(me, k) -> found = found | (bucket[PAIR(me, k)] & ~(1 << me))
        :: else
        fi;
        k++
    :: else -> break
    od;
    saw[me] = found;
    printf("@ article %d saw the articles of bit mask %d\n", me, found);
    read_all[me] = true;
    /* 3. once all have read: the pairwise rule */
    k = 0;
    do
    :: k < N -> read_all[k]; k++
    :: else -> break
    od;
    best = N;
    k = 0;
    do
    :: k < N ->
        if
        :: (saw[me] & (1 << k)) != 0 && ((saw[k] & (1 << me)) == 0 || k < me) ->
            if
            :: best == N -> best = k
            :: else
            fi
        :: else
        fi;
        k++
    :: else -> break
    od;
    v = (best == N -> ORIGINAL : COPY_OF(best));
    s = 0;
    publish(v);
#endif
done:
    finished[me] = true
}

proctype Takedown(byte x) {
    byte k = 0;
    remembered[x] = true;       /* home shard: the id is refused from now on */
    do
    :: k < N ->
        if
        :: ALIKE(x, k) -> bucket[PAIR(x, k)] = bucket[PAIR(x, k)] & ~(1 << x)
        :: else
        fi;
        k++
    :: else -> break
    od;
    atomic { seq_of[x] = 0; stored[x] = 0 };   /* home shard: its seq and verdict go */
    acked[x] = true
}

/* Once every article is finished: each verdict is the one the articles decided one at a time
 * in seq order give (an original iff no article alike has a smaller seq; a copy names an
 * earlier article alike), so a story whose articles are all alike has exactly one original. */
proctype Story() {
    byte k, j, originals;
    bool earlier;
    k = 0;
    do
    :: k < N -> finished[k]; k++
    :: else -> break
    od;
    originals = 0;
    k = 0;
    do
    :: k < N ->
        earlier = false;
        j = 0;
        do
        :: j < N ->
            if
            :: ALIKE(j, k) && seq_of[j] != 0 && seq_of[j] < seq_of[k] -> earlier = true
            :: else
            fi;
            j++
        :: else -> break
        od;
        if
        :: TAKEDOWN && k == 0
        :: else ->
            if
            :: published[k] == ORIGINAL ->
                originals++;
#if PROTOCOL != 0
                assert(TAKEDOWN || !earlier)
#else
                skip
#endif
            :: published[k] >= COPY_OF(0) ->
#if PROTOCOL != 0
                assert(ALIKE(published[k] - 2, k));
                assert(TAKEDOWN || earlier);
                assert(seq_of[published[k] - 2] != 0 || (TAKEDOWN && published[k] == COPY_OF(0)));
                assert(TAKEDOWN && published[k] == COPY_OF(0) || seq_of[published[k] - 2] < seq_of[k])
#else
                skip
#endif
            :: else -> assert(TAKEDOWN)   /* only a race with a takedown publishes nothing */
            fi
        fi;
        k++
    :: else -> break
    od;
    assert(TAKEDOWN || CHAIN || originals == 1)
}

init {
    byte i;
    atomic {
        i = 0;
        do
        :: i < N -> run Article(i); i++
        :: else -> break
        od;
#if TAKEDOWN
        run Takedown(0);
#endif
        run Story()
    }
}
