//go:build race

package diskbuffer

// raceDetector: under -race, sync.Pool drops items at random, so a pooled
// buffer (s2's tables) is allocated again now and then, and counts of bytes
// allocated are not repeatable.
const raceDetector = true
