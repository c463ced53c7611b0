//go:build unix

package diskbuffer

import "syscall"

// oNoFollow makes opening a symbolic link fail.
const oNoFollow = syscall.O_NOFOLLOW
