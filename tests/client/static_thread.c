/* A fully static program (-static) with libfaultline.a: its threads are
 * created (the pthread_create wrapper reaches the C library's own), and a
 * crash in one of them is caught on its alternate stack; so is one in a
 * SIGEV_THREAD timer's thread ("timer": the timer_create wrapper reaches
 * the C library's own too), and in a message queue's SIGEV_THREAD
 * notification ("mq": mq_notify's wrapper).  "mq_signal": a queue's
 * notification by signal, which needs no C library's mq_notify.
 * "mq_close": mq_close() (Faultline's, falling back to close()) closes
 * the descriptor.
 * "dlclose LIB": LIB opened and closed; prints whether it was unloaded
 * (the dlclose wrapper reached the C library's own) and dlclose's
 * return value. */
#include <dlfcn.h>
#include <faultline.h>
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int depth_sink;

static int recurse(int n)
{
    volatile char pad[256];
    pad[0] = (char)n;
    depth_sink = pad[0];
    return recurse(n + 1) + pad[0];
}

static void *worker(void *arg)
{
    return arg ? (void *)(long)recurse(0) : NULL;
}

static void timer_fn(union sigval v)
{
    (void)v;
    recurse(0);
}

int main(int argc, char **argv)
{
    if (!faultline_install("static_thread", "1", NULL))
        return 2;
    if (argc > 2 && !strcmp(argv[1], "dlclose")) {
        void *h = dlopen(argv[2], RTLD_NOW);
        if (!h) {
            fprintf(stderr, "dlopen: %s\n", dlerror());
            return 1;
        }
        int rc = dlclose(h);
        printf("unloaded %d rc %d\n", dlopen(argv[2], RTLD_NOW | RTLD_NOLOAD) == NULL, rc);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "mq_close")) {
        struct mq_attr attr = {.mq_maxmsg = 1, .mq_msgsize = 8};
        mqd_t q = mq_open("/static_thread_close", O_RDWR | O_CREAT, 0600, &attr);
        mq_unlink("/static_thread_close");
        if (q == (mqd_t)-1 || mq_close(q) != 0 || fcntl(q, F_GETFD) != -1) {
            perror("mq_close");
            return 1;
        }
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "mq_signal")) {
        struct mq_attr attr = {.mq_maxmsg = 1, .mq_msgsize = 8};
        mqd_t q = mq_open("/static_thread_sig", O_RDWR | O_CREAT, 0600, &attr);
        mq_unlink("/static_thread_sig");
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigprocmask(SIG_BLOCK, &set, NULL);
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_SIGNAL;
        sev.sigev_signo = SIGUSR1;
        int sig = 0;
        if (q == (mqd_t)-1 || mq_notify(q, &sev) != 0 || mq_send(q, "x", 1, 0) != 0 ||
            sigwait(&set, &sig) != 0 || sig != SIGUSR1) {
            perror("mq_signal");
            return 1;
        }
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "mq")) {
        struct mq_attr attr = {.mq_maxmsg = 1, .mq_msgsize = 8};
        mqd_t q = mq_open("/static_thread", O_RDWR | O_CREAT, 0600, &attr);
        mq_unlink("/static_thread");
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD;
        sev.sigev_notify_function = timer_fn;
        if (q == (mqd_t)-1 || mq_notify(q, &sev) != 0 || mq_send(q, "x", 1, 0) != 0) {
            perror("mq");
            return 1;
        }
        sleep(5);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "timer")) {
        struct sigevent sev;
        memset(&sev, 0, sizeof sev);
        sev.sigev_notify = SIGEV_THREAD;
        sev.sigev_notify_function = timer_fn;
        timer_t tm;
        struct itimerspec its = {{0, 0}, {0, 1000000}};
        if (timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0 ||
            timer_settime(tm, 0, &its, NULL) != 0) {
            perror("timer");
            return 1;
        }
        sleep(5);
        return 0;
    }
    pthread_t t;
    int rc = pthread_create(&t, NULL, worker, argc > 1 && !strcmp(argv[1], "crash") ? &t : NULL);
    if (rc != 0) {
        fprintf(stderr, "pthread_create: %s\n", strerror(rc));
        return 1;
    }
    pthread_join(t, NULL);
    return 0;
}
