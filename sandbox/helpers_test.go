package sandbox_test

import "os"

func statDir(p string) (os.FileInfo, error) { return os.Stat(p) }
