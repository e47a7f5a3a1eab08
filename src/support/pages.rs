//! Giving back the library's read-only pages once the server is up, and again after what runs
//! once an agent is there (its handshake, a checkpoint: lua/pi-ide/core/server.lua). Loading
//! touches much that never runs again (the relocation and symbol tables ld.so reads, `luaopen`,
//! the server's start), and the kernel maps 64 KiB around each page that faults; dropping the
//! mappings of the code and read-only segments leaves resident only what runs from then on,
//! which faults back in (from the page cache, a minor fault per 64 KiB). Only segments that were
//! never written: RELRO and data hold relocated values and are not touched. (A debugger's
//! breakpoints set in the library are written into its code: they are dropped too.)

/// Drops this process's mappings of the library's read-only segments; returns the bytes
/// advised (0 where this is not 64-bit Linux).
pub fn release_read_only() -> usize {
    imp::release_read_only()
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod imp {
    use libc::{c_int, c_void, dl_phdr_info, size_t};

    struct Search {
        /// An address inside the library: how its entry is recognised.
        anchor: usize,
        advised: usize,
    }

    pub fn release_read_only() -> usize {
        let mut search = Search {
            anchor: release_read_only as fn() -> usize as usize,
            advised: 0,
        };
        // SAFETY: the callback only reads the headers it is given and writes `search`.
        unsafe { libc::dl_iterate_phdr(Some(each_object), &mut search as *mut Search as *mut c_void) };
        search.advised
    }

    unsafe extern "C" fn each_object(info: *mut dl_phdr_info, _: size_t, data: *mut c_void) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid entry and our `Search`.
        let (info, search) = unsafe { (&*info, &mut *(data as *mut Search)) };
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
        let headers = unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let base = info.dlpi_addr as usize;
        let span = |h: &libc::Elf64_Phdr| {
            let start = base + h.p_vaddr as usize;
            start..start + h.p_memsz as usize
        };
        let loads = || headers.iter().filter(|h| h.p_type == libc::PT_LOAD);
        if !loads().any(|h| span(h).contains(&search.anchor)) {
            return 0; // another object
        }
        for h in loads().filter(|h| h.p_flags & libc::PF_W == 0) {
            search.advised += advise(span(h));
        }
        1
    }

    /// MADV_DONTNEED on the whole pages inside `range` (a partial page at either end is left).
    fn advise(range: std::ops::Range<usize>) -> usize {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let start = range.start.next_multiple_of(page);
        let end = range.end / page * page;
        if end <= start {
            return 0;
        }
        // SAFETY: the range is inside a read-only segment of this library, mapped from its file
        // and never written: dropping it only makes the next access read the file's page again.
        let r = unsafe { libc::madvise(start as *mut c_void, end - start, libc::MADV_DONTNEED) };
        if r == 0 { end - start } else { 0 }
    }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
mod imp {
    pub fn release_read_only() -> usize {
        0
    }
}

#[cfg(all(test, target_os = "linux", target_pointer_width = "64"))]
mod tests {
    /// In the test binary the object found is the executable itself: its code and read-only
    /// data are dropped and come back from the file as they are used.
    #[test]
    fn read_only_segments_are_given_back_and_read_again() {
        let text = format!("{:?}", (1..200).map(|i| i * 3).collect::<Vec<u32>>());
        let advised = super::release_read_only();
        assert!(advised > 64 * 1024, "advised {advised} bytes");
        assert_eq!(text, format!("{:?}", (1..200).map(|i| i * 3).collect::<Vec<u32>>()));
        assert_eq!(super::release_read_only(), advised, "the same segments each time");
    }
}
