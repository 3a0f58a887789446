/*
 * readonly-clock: an LD_PRELOAD shim that lets a time daemon believe it
 * controls the system clock while the clock is never changed.
 *
 * Interop tests run real NTP daemons (ntpd-rs, ...) that refuse to start
 * unless they can take control of the clock. Under this shim:
 *
 * - clock_adjtime, adjtimex, ntp_adjtime (and glibc's __adjtimex) with
 *   modes == 0 or ADJ_OFFSET_SS_READ (a read) go to the kernel unchanged,
 *   then the values the daemon "set" earlier (frequency, status, max/est
 *   error, time constant, tick) are laid over the kernel's answer;
 * - the same calls with any other modes are absorbed: nothing reaches the
 *   kernel except a read, the requested values are kept in memory, and the
 *   call succeeds (a step, ADJ_SETOFFSET, or a slew, ADJ_OFFSET, is dropped);
 * - clock_settime and settimeofday succeed without calling the kernel.
 *
 * This is for every clock id, not only CLOCK_REALTIME: a test has no business
 * changing any clock. It is a convenience, not the safety net: the tests also
 * run the daemon in a user namespace (`unshare --user --map-root-user`), where
 * it lacks CAP_SYS_TIME over the host's clocks, so a call that got past this
 * shim (a static binary, a raw syscall) would fail with EPERM rather than
 * change the host clock.
 *
 * READONLY_CLOCK_LOG=PATH appends one line per absorbed call to PATH, so a
 * test can show the daemon did try to change the clock and was not let.
 *
 * Build: cc -shared -fPIC -O2 -o readonly-clock.so readonly-clock.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <time.h>
#include <unistd.h>

/* What the daemon believes it set; laid over every read. */
static struct {
    int have_freq, have_status, have_maxerror, have_esterror, have_constant, have_tick;
    long freq, maxerror, esterror, constant, tick;
    int status;
} kept;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_absorbed(const char *call, long clock, unsigned modes)
{
    const char *path = getenv("READONLY_CLOCK_LOG");
    if (path == NULL || *path == '\0')
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char line[128];
    int n = snprintf(line, sizeof line, "%s clock=%ld modes=0x%x absorbed\n", call, clock, modes);
    if (n > 0)
        (void)!write(fd, line, (size_t)n);
    close(fd);
}

static int is_read(unsigned modes)
{
    return modes == 0 || modes == ADJ_OFFSET_SS_READ;
}

/* The kernel's state, read only, with the kept values laid over it. */
static int read_state(clockid_t clock, struct timex *buf)
{
    buf->modes = 0;
    long state = syscall(SYS_clock_adjtime, clock, buf);
    if (state < 0)
        return -1;
    pthread_mutex_lock(&kept_lock);
    if (kept.have_freq)
        buf->freq = kept.freq;
    if (kept.have_status)
        /* The read-only bits (STA_NANO, STA_CLOCKERR, ...) stay the kernel's. */
        buf->status = (buf->status & STA_RONLY) | (kept.status & ~STA_RONLY);
    if (kept.have_maxerror)
        buf->maxerror = kept.maxerror;
    if (kept.have_esterror)
        buf->esterror = kept.esterror;
    if (kept.have_constant)
        buf->constant = kept.constant;
    if (kept.have_tick)
        buf->tick = kept.tick;
    pthread_mutex_unlock(&kept_lock);
    return (int)state;
}

static void keep(const struct timex *buf)
{
    unsigned modes = buf->modes;
    pthread_mutex_lock(&kept_lock);
    if (modes & ADJ_FREQUENCY) {
        kept.have_freq = 1;
        kept.freq = buf->freq;
    }
    if (modes & ADJ_STATUS) {
        kept.have_status = 1;
        kept.status = buf->status;
    }
    if (modes & ADJ_MAXERROR) {
        kept.have_maxerror = 1;
        kept.maxerror = buf->maxerror;
    }
    if (modes & ADJ_ESTERROR) {
        kept.have_esterror = 1;
        kept.esterror = buf->esterror;
    }
    if (modes & ADJ_TIMECONST) {
        kept.have_constant = 1;
        kept.constant = buf->constant;
    }
    if (modes & ADJ_TICK) {
        kept.have_tick = 1;
        kept.tick = buf->tick;
    }
    pthread_mutex_unlock(&kept_lock);
}

static int adjust(const char *call, clockid_t clock, struct timex *buf)
{
    if (buf == NULL) {
        errno = EFAULT;
        return -1;
    }
    unsigned modes = buf->modes;
    if (is_read(modes))
        return read_state(clock, buf);
    keep(buf);
    log_absorbed(call, (long)clock, modes);
    return read_state(clock, buf);
}

int clock_adjtime(clockid_t clock, struct timex *buf)
{
    return adjust("clock_adjtime", clock, buf);
}

int adjtimex(struct timex *buf)
{
    return adjust("adjtimex", CLOCK_REALTIME, buf);
}

int __adjtimex(struct timex *buf)
{
    return adjust("__adjtimex", CLOCK_REALTIME, buf);
}

int ntp_adjtime(struct timex *buf)
{
    return adjust("ntp_adjtime", CLOCK_REALTIME, buf);
}

int clock_settime(clockid_t clock, const struct timespec *tp)
{
    (void)tp;
    log_absorbed("clock_settime", (long)clock, 0);
    return 0;
}

int settimeofday(const struct timeval *tv, const struct timezone *tz)
{
    (void)tv;
    (void)tz;
    log_absorbed("settimeofday", (long)CLOCK_REALTIME, 0);
    return 0;
}
