//go:build race

package memindex

// raceEnabled skips the measurements that the race detector makes
// meaningless (memory, timing) or too slow.
const raceEnabled = true
