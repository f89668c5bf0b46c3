"""A case-insensitive file system for the red team (like WSL's drvfs on
/mnt/c, or a casefolded directory): names are stored lower-cased in the
backing directory. Usage: cifs.py BACKING MOUNTPOINT (root; runs in the
foreground until unmounted or signalled)."""
import os, sys, errno
from fusepy import FUSE, FuseOSError, Operations
class CI(Operations):
    def __init__(s, root): s.root = root
    def _p(s, path): return os.path.join(s.root, path.lstrip('/').lower())
    def getattr(s, path, fh=None):
        st = os.lstat(s._p(path))
        return {k: getattr(st, k) for k in ('st_atime','st_ctime','st_gid','st_mode','st_mtime','st_nlink','st_size','st_uid','st_ino')}
    def readdir(s, path, fh): return ['.', '..'] + os.listdir(s._p(path))
    def mkdir(s, path, mode): os.mkdir(s._p(path), mode)
    def rmdir(s, path): os.rmdir(s._p(path))
    def unlink(s, path): os.unlink(s._p(path))
    def mknod(s, path, mode, dev): os.mknod(s._p(path), mode, dev)
    def symlink(s, name, target): os.symlink(target, s._p(name))
    def readlink(s, path): return os.readlink(s._p(path))
    def rename(s, a, b): os.rename(s._p(a), s._p(b))
    def link(s, target, name): os.link(s._p(name), s._p(target))
    def chmod(s, path, mode): os.chmod(s._p(path), mode)
    def chown(s, path, u, g): os.lchown(s._p(path), u, g)
    def truncate(s, path, length, fh=None): os.truncate(s._p(path), length)
    def utimens(s, path, times=None): os.utime(s._p(path), times, follow_symlinks=False)
    def open(s, path, flags): return os.open(s._p(path), flags)
    def create(s, path, mode, fi=None): return os.open(s._p(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    def read(s, path, size, off, fh): os.lseek(fh, off, 0); return os.read(fh, size)
    def write(s, path, data, off, fh): os.lseek(fh, off, 0); return os.write(fh, data)
    def release(s, path, fh): return os.close(fh)
    def flush(s, path, fh): return 0
    def fsync(s, path, ds, fh): return 0
    def statfs(s, path):
        st = os.statvfs(s._p(path))
        return {k: getattr(st, k) for k in ('f_bavail','f_bfree','f_blocks','f_bsize','f_favail','f_ffree','f_files','f_flag','f_frsize','f_namemax')}
FUSE(CI(sys.argv[1]), sys.argv[2], foreground=True, allow_other=True, use_ino=True)
