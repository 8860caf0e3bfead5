//go:build cgo

package bootstrap

/*
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <linux/capability.h>

// hostd_drop_bounding_set runs before the Go runtime starts its threads
// (an ELF constructor of this cgo binary), while the process has a single
// thread: the capability bounding set is per thread and inherited by the
// threads created later, so dropping it here drops it for the whole
// process. A cgo binary cannot do that later: syscall.AllThreadsSyscall
// refuses to run when cgo is linked in. Only `hostd serve` started as
// root is concerned; CAP_SETUID and CAP_SETGID stay (the sandbox's
// per-thread switches), everything else goes. The bounding set only
// limits what execve can grant: hostd's own permitted set is unchanged,
// so binding privileged ports still works.
static void hostd_drop_bounding_set(void) __attribute__((constructor));
static void hostd_drop_bounding_set(void) {
	if (geteuid() != 0) return;
	char buf[256];
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0) return;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return;
	buf[n] = 0;
	size_t first = strlen(buf) + 1;
	if (first >= (size_t)n || strcmp(buf + first, "serve") != 0) return;
	for (int c = 0; c < 64; c++) {
		if (c == CAP_SETUID || c == CAP_SETGID) continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno == EINVAL) break;
	}
}
*/
import "C"
