// The time limit by memory fence, for modules with probes (wasmrewrite.AddProbes says
// why and how; RATIONALE.md how it was chosen). A probed module has a
// fence page, a one-page memory that only its probes read, one at the top
// of every loop. At a call's deadline, or when its caller cancels, the
// ticker (pgw_tick) makes that page inaccessible; the guest's next probe
// faults inside the page's reservation, which wasmtime's own handler turns
// into a trap. No signal is sent and no handler of ours is installed: the
// fence is an mprotect from the ticker's thread, and the host never
// touches the fence page, so only a probe can fault on it. Included by
// shim.h after pgw_store.
#include <pthread.h>
#include <sys/mman.h>

static pthread_mutex_t pgw_calls_mu = PTHREAD_MUTEX_INITIALIZER;
static pgw_store *pgw_calls; // fenced stores inside a call, linked by next/prev

// pgw_fence_arm, from the ticker: the fence goes up for every call past
// its deadline or canceled.
static void pgw_fence_arm(uint64_t epoch) {
	pthread_mutex_lock(&pgw_calls_mu);
	for (pgw_store *s = pgw_calls; s; s = s->next) {
		if (s->fenced || (!atomic_load(&s->canceled) && epoch < s->deadline)) continue;
		if (mprotect(s->fence_base, s->fence_len, PROT_NONE) == 0) s->fenced = true;
	}
	pthread_mutex_unlock(&pgw_calls_mu);
}

// pgw_fence_enter and pgw_fence_leave bracket a fenced store's call: the
// ticker sees it in between. After leave, the fence (if it went up) is
// down again and *fenced says whether it went up.
static void pgw_fence_enter(pgw_store *s) {
	pthread_mutex_lock(&pgw_calls_mu);
	s->fenced = false;
	s->prev = NULL;
	s->next = pgw_calls;
	if (pgw_calls) pgw_calls->prev = s;
	pgw_calls = s;
	pthread_mutex_unlock(&pgw_calls_mu);
}

static bool pgw_fence_leave(pgw_store *s) {
	pthread_mutex_lock(&pgw_calls_mu);
	if (s->prev) s->prev->next = s->next; else pgw_calls = s->next;
	if (s->next) s->next->prev = s->prev;
	bool fenced = s->fenced;
	pthread_mutex_unlock(&pgw_calls_mu);
	if (fenced) mprotect(s->fence_base, s->fence_len, PROT_READ | PROT_WRITE);
	return fenced;
}
