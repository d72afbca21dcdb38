//go:build !unix

package permission

import "os"

func statIdentity(os.FileInfo) (fileID, uint64, bool) { return fileID{}, 0, false }
