package main

import "syscall"

// raiseNofile raises this process's open-file limit to its hard limit and
// returns the new soft limit.
func raiseNofile() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return 0, err
		}
	}
	return lim.Cur, nil
}
