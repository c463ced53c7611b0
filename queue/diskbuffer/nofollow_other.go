//go:build !unix

package diskbuffer

// oNoFollow is unset where the system has no O_NOFOLLOW: osFS.OpenFile
// checks the path with Lstat first instead.
const oNoFollow = 0
