//! A pool object's handle (zsmalloc's `unsigned long handle`): numbers only, 12 bytes.

use super::arena::{BackingPage, CHUNK_PAGES};
use super::{MAX_PAGES_PER_ZSPAGE, MIN_ALLOC_SIZE, NR_CLASSES, PAGE_SIZE};

/// Where an object lives: the counterpart of zsmalloc's `unsigned long handle`, 12 bytes.
/// It names the backing page the object starts in and, where it straddles into another
/// page of the same chunk, that page, so that a read takes no lock but theirs (an object
/// that ends in another chunk, where a zspage's pages came from two, finds its second page
/// in its zspage's row, under its class's lock). Not `Clone`: [`Pool::free`](super::Pool::free)
/// takes it by value.
pub struct Handle {
    /// The page the object starts in.
    pub(super) first: BackingPage,
    /// Its zspage's id in its class.
    pub(super) zspage: u32,
    /// Its class's index (bits 0..8), its index in its zspage (8..18) and where its second
    /// page is (18..28: [`ONE_PAGE`], the page's index in the first's chunk plus one, or
    /// [`OTHER_CHUNK`]).
    bits: u32,
}

/// A [`Handle`]'s second-page code where the object lies in one page.
const ONE_PAGE: u32 = 0;
/// A [`Handle`]'s second-page code where the object ends in a page of another chunk.
const OTHER_CHUNK: u32 = (1 << 10) - 1;
const _: () = assert!(NR_CLASSES <= 1 << 8);
const _: () = assert!(MAX_PAGES_PER_ZSPAGE * PAGE_SIZE / MIN_ALLOC_SIZE <= 1 << 10);
const _: () = assert!(CHUNK_PAGES < OTHER_CHUNK as usize);

/// Where a [`Handle`]'s object ends, if in another page than it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Second {
    /// It lies in one page.
    None,
    /// It ends in this page of the first's chunk.
    Page(BackingPage),
    /// It ends in a page of another chunk: its zspage's row has it.
    OtherChunk,
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handle")
            .field("class", &self.class())
            .field("zspage", &self.zspage)
            .field("obj", &self.obj())
            .finish_non_exhaustive()
    }
}

impl Handle {
    /// The handle of object `obj` of class `class`'s zspage `zspage`, starting in `first`
    /// and ending in `second` where it straddles two pages.
    pub(super) fn new(
        first: BackingPage,
        second: Option<BackingPage>,
        zspage: u32,
        class: usize,
        obj: u16,
    ) -> Handle {
        debug_assert!(class < NR_CLASSES && (obj as u32) < 1 << 10);
        let code = match second {
            None => ONE_PAGE,
            Some(s) if s.chunk() == first.chunk() => s.index() as u32 + 1,
            Some(_) => OTHER_CHUNK,
        };
        Handle {
            first,
            zspage,
            bits: class as u32 | (obj as u32) << 8 | code << 18,
        }
    }

    /// Its class's index.
    #[inline]
    pub(super) fn class(&self) -> usize {
        (self.bits & 0xff) as usize
    }

    /// Its index in its zspage.
    #[inline]
    pub(super) fn obj(&self) -> u16 {
        ((self.bits >> 8) & 0x3ff) as u16
    }

    /// Where it ends, if in another page than it starts.
    #[inline]
    pub(super) fn second(&self) -> Second {
        match self.bits >> 18 {
            ONE_PAGE => Second::None,
            OTHER_CHUNK => Second::OtherChunk,
            code => Second::Page(self.first.in_chunk((code - 1) as u16)),
        }
    }

    /// Where the object is: (class index, zspage id, object index). Two live handles never
    /// have the same place.
    pub fn place(&self) -> (u16, u32, u16) {
        (self.class() as u16, self.zspage, self.obj())
    }
}

impl PartialEq for Handle {
    fn eq(&self, other: &Self) -> bool {
        self.place() == other.place()
    }
}

impl Eq for Handle {}
