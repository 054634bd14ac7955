package quickhook

// sysMemfdCreate is memfd_create(2), which package syscall does not name.
const sysMemfdCreate = 319
