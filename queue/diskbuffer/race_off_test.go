//go:build !race

package diskbuffer

const raceDetector = false
