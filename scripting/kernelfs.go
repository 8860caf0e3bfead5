package scripting

import "os"

// CheckHookFile accepts a file a hook opened (or a hook or module file)
// when it is a regular file outside the kernel's file systems (Linux: see
// kernelFS); the error is an *os.PathError matching fs.ErrPermission
// otherwise.
func CheckHookFile(f *os.File) error {
	if err := checkRegular(f); err != nil {
		return err
	}
	return checkNotKernelFS(f, "open")
}

// CheckHookDir accepts a directory a hook opened to list it (Ruby's
// Dir.children) when it is a directory outside the kernel's file systems.
func CheckHookDir(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &os.PathError{Op: "opendir", Path: f.Name(), Err: errNotHookFile}
	}
	return checkNotKernelFS(f, "opendir")
}
