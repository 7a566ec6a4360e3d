/*
 * The child's end of the twin's Unix socket bridge, shared by the twin's native libraries
 * (libnvidia-ml.so.1 and the file view).  One request and one reply per line, fields separated
 * by TAB; the first line of a connection is "hello <token>" (reply "0"), which tells the twin
 * which container this process belongs to.
 *
 * Environment (set by the twin when it starts the process):
 *   STEPGRAPH_VIEW_SOCKET  path of the twin's Unix socket
 *   STEPGRAPH_VIEW_TOKEN   which container this process belongs to
 *
 * A process that forks gets its own connection (the socket is re-opened when the PID changes).
 * Callers hold `bridge_lock` around bridge_request() and their use of `reply`.
 */
#ifndef TWIN_BRIDGE_H
#define TWIN_BRIDGE_H

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#define LINE_MAX_BYTES 65536

static pthread_mutex_t bridge_lock = PTHREAD_MUTEX_INITIALIZER;
static int sock = -1;
static pid_t sock_pid = 0;
static char reply[LINE_MAX_BYTES];

static int send_all(const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = send(sock, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* One line into `reply` (without the newline); -1 when the twin has gone.  The twin answers one
 * line per request and nothing else, so whatever one recv returns belongs to this reply. */
static int read_line(void) {
    size_t used = 0;
    while (used < sizeof(reply) - 1) {
        ssize_t n = recv(sock, reply + used, sizeof(reply) - 1 - used, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        char *end = memchr(reply + used, '\n', (size_t)n);
        used += (size_t)n;
        if (end) {
            *end = '\0';
            return 0;
        }
    }
    return -1;
}

static void disconnect(void) {
    if (sock >= 0)
        close(sock);
    sock = -1;
}

static int exchange(const char *line) {
    if (send_all(line, strlen(line)) != 0 || read_line() != 0) {
        disconnect();
        return -1;
    }
    return 0;
}

static int connect_twin(void) {
    const char *path = getenv("STEPGRAPH_VIEW_SOCKET");
    const char *token = getenv("STEPGRAPH_VIEW_TOKEN");
    struct sockaddr_un addr;
    char hello[512];
    if (!path || !token || strlen(path) >= sizeof(addr.sun_path))
        return -1;
    sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return -1;
    memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path);
    if (connect(sock, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
        disconnect();
        return -1;
    }
    sock_pid = getpid();
    snprintf(hello, sizeof(hello), "hello\t%s\n", token);
    if (exchange(hello) != 0 || strcmp(reply, "0") != 0) {
        disconnect();
        return -1;
    }
    return 0;
}

/* Send one request line (ending in '\n'); 0 with the reply in `reply`, -1 when there is no
 * twin to ask (1) or it went away mid-call (2) — `*gone` says which. */
static int bridge_request(const char *line, int *gone) {
    *gone = 0;
    if (sock >= 0 && sock_pid != getpid())
        disconnect(); /* a forked child must not share its parent's stream */
    if (sock < 0 && connect_twin() != 0) {
        *gone = 1;
        return -1;
    }
    if (exchange(line) != 0) {
        *gone = 2;
        return -1;
    }
    return 0;
}

#endif
