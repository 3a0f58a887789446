/*
 * offset-clock: an LD_PRELOAD shim that shows a process a stepped
 * CLOCK_REALTIME without touching the real clock (a time namespace cannot
 * move CLOCK_REALTIME). The clock-step tests (crates/authtime/tests/
 * clock_steps.rs, docs/clock-steps.md) run `authtime serve` under it.
 *
 * OFFSET_CLOCK_FILE=PATH names a file holding a signed number of seconds
 * (e.g. "-3600"); the offset is re-read at most every 50 ms (monotonic
 * time), so a test steps the daemon's clock by rewriting the file. A missing
 * or unreadable file keeps the last offset (0 at start).
 *
 * Shifted by the offset:
 * - clock_gettime for CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_TAI
 *   (and glibc's __clock_gettime), gettimeofday, time;
 * - the kernel's receive timestamps in control messages returned by recvmsg
 *   and recvmmsg (SCM_TIMESTAMPNS, SCM_TIMESTAMP, SCM_TIMESTAMPING software
 *   stamp), including MSG_ERRQUEUE transmit timestamps, so that a daemon's
 *   receive and transmit times stay consistent with its clock reads.
 * Not shifted: CLOCK_MONOTONIC, CLOCK_BOOTTIME and the other clocks (a real
 * clock step does not move them either), raw syscalls, static binaries.
 *
 * Build: cc -shared -fPIC -O2 -o offset-clock.so offset-clock.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static _Atomic long long offset_s;
static _Atomic long long checked_ns = -1000000000000LL;

static long long mono_ns(void)
{
    struct timespec ts;
    /* The raw syscall: not interposed, and monotonic is never shifted. */
    if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long current_offset(void)
{
    long long now = mono_ns();
    long long last = atomic_load(&checked_ns);
    if (now - last >= 50000000LL && atomic_compare_exchange_strong(&checked_ns, &last, now)) {
        const char *path = getenv("OFFSET_CLOCK_FILE");
        if (path != NULL && *path != '\0') {
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                char buf[64];
                ssize_t n = read(fd, buf, sizeof buf - 1);
                close(fd);
                if (n > 0) {
                    buf[n] = '\0';
                    char *end = NULL;
                    long long v = strtoll(buf, &end, 10);
                    if (end != buf)
                        atomic_store(&offset_s, v);
                }
            }
        }
    }
    return atomic_load(&offset_s);
}

static int shifted_clock(clockid_t id)
{
    return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI;
}

static int real_clock_gettime(clockid_t id, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, id, ts);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*next)(clockid_t, struct timespec *);
    if (next == NULL)
        next = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int rc = next != NULL ? next(id, ts) : real_clock_gettime(id, ts);
    if (rc == 0 && shifted_clock(id))
        ts->tv_sec += (time_t)current_offset();
    return rc;
}

int __clock_gettime(clockid_t id, struct timespec *ts)
{
    return clock_gettime(id, ts);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

time_t time(time_t *out)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}

static void shift_cmsgs(struct msghdr *msg)
{
    if (msg == NULL || msg->msg_control == NULL || msg->msg_controllen == 0)
        return;
    long long off = current_offset();
    if (off == 0)
        return;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
        if (c->cmsg_level != SOL_SOCKET)
            continue;
        if (c->cmsg_type == SCM_TIMESTAMPNS && c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            ts.tv_sec += (time_t)off;
            memcpy(CMSG_DATA(c), &ts, sizeof ts);
        } else if (c->cmsg_type == SCM_TIMESTAMP && c->cmsg_len >= CMSG_LEN(sizeof(struct timeval))) {
            struct timeval tv;
            memcpy(&tv, CMSG_DATA(c), sizeof tv);
            tv.tv_sec += (time_t)off;
            memcpy(CMSG_DATA(c), &tv, sizeof tv);
        } else if (c->cmsg_type == SCM_TIMESTAMPING &&
                   c->cmsg_len >= CMSG_LEN(sizeof(struct scm_timestamping))) {
            struct scm_timestamping st;
            memcpy(&st, CMSG_DATA(c), sizeof st);
            /* ts[0] is the software (CLOCK_REALTIME) stamp; ts[2], the raw
             * hardware stamp, is of the NIC's clock and left alone. */
            if (st.ts[0].tv_sec != 0 || st.ts[0].tv_nsec != 0)
                st.ts[0].tv_sec += (time_t)off;
            memcpy(CMSG_DATA(c), &st, sizeof st);
        }
    }
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    static ssize_t (*next)(int, struct msghdr *, int);
    if (next == NULL)
        next = (ssize_t (*)(int, struct msghdr *, int))dlsym(RTLD_NEXT, "recvmsg");
    ssize_t n = next != NULL ? next(fd, msg, flags) : syscall(SYS_recvmsg, fd, msg, flags);
    if (n >= 0)
        shift_cmsgs(msg);
    return n;
}

int recvmmsg(int fd, struct mmsghdr *vec, unsigned int len, int flags, struct timespec *timeout)
{
    static int (*next)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
    if (next == NULL)
        next = (int (*)(int, struct mmsghdr *, unsigned int, int, struct timespec *))dlsym(
            RTLD_NEXT, "recvmmsg");
    int n = next != NULL ? next(fd, vec, len, flags, timeout)
                         : (int)syscall(SYS_recvmmsg, fd, vec, len, flags, timeout);
    for (int i = 0; i < n && vec != NULL; i++)
        shift_cmsgs(&vec[i].msg_hdr);
    return n;
}
