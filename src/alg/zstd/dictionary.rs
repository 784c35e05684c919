//! [`Dictionary`]: a zstd dictionary, from bytes or trained from sample pages, and what a
//! transform digests of its dictionaries once ([`Digested`]) for every workspace to
//! reference.
//!
//! A 4 KiB page is too small for zstd to learn much from; what pages have in common
//! (allocator headers, object layouts, pointers into the same ranges) a dictionary holds
//! once. The kernel's zram loads one per device and shares it (no per-CPU copy); so does a
//! transform here: one `ZSTD_CDict` and one `ZSTD_DDict` per dictionary, digested when the
//! transform is made, referenced by every workspace's CCtx and DCtx; and which of them a
//! frame is read with ([`select`]).

use std::fmt;
use std::sync::Arc;

use zstd_safe::{CDict, DCtx, DDict, ResetDirective};

use super::{ZstdParams, zstd_error};
use crate::Error;

/// A zstd dictionary: its bytes and its ID. Cheap to clone (a reference count) and to share
/// across threads and transforms.
///
/// Give it to a transform with [`ZstdParams::dictionary`] (compress and decompress with it)
/// or [`ZstdParams::decompression_dictionary`] (read older frames with it).
///
/// ```
/// use acomp::{Acomp, Dictionary, ZstdParams};
///
/// // Pages that share most of their bytes, as a process's heap pages do.
/// let pages: Vec<Vec<u8>> = (0..64u32)
///     .map(|i| format!("object {{ id: {i:08}, kind: page, refs: [1, 2, 3] }} ").repeat(60).into_bytes())
///     .collect();
/// let samples: Vec<&[u8]> = pages.iter().map(|p| &p[..]).collect();
/// let dict = Dictionary::train(&samples, 4096)?;
/// let tfm = Acomp::with_zstd(ZstdParams::default().dictionary(dict.clone()))?;
///
/// let mut frame = [0u8; 4096];
/// let n = tfm.compress_to_buffer(&pages[7], &mut frame)?;
/// let mut back = vec![0u8; pages[7].len()];
/// tfm.decompress_to_buffer(&frame[..n], &mut back)?;
/// assert_eq!(back, pages[7]);
/// assert!(tfm.stats().dictionary_bytes > 0);
/// # Ok::<(), acomp::Error>(())
/// ```
#[derive(Clone)]
pub struct Dictionary(Arc<Inner>);

struct Inner {
    /// `ZSTD_getDictID_fromDict`: 0 for a raw-content dictionary.
    id: u32,
    bytes: Box<[u8]>,
}

impl Dictionary {
    /// A dictionary from its bytes, as zstd takes them (`ZSTD_createCDict`,
    /// `ZSTD_createDDict` in `ZSTD_dct_auto` mode): bytes that start with zstd's dictionary
    /// magic number (`0xEC30A437`, as [`train`](Dictionary::train) and `zstd --train`
    /// write them) are a structured dictionary, with an ID and entropy tables; any other
    /// bytes are a raw-content dictionary of ID 0, used as history only. (zstd ignores a
    /// raw-content dictionary of fewer than 8 bytes when compressing.)
    ///
    /// # Errors
    ///
    /// [`Error::Dictionary`] (`EINVAL`) for no bytes at all (zstd would take them as no
    /// dictionary, silently: a transform without one is [`ZstdParams::default`]), and
    /// where the bytes start with the magic number but zstd refuses the rest (corrupt or
    /// truncated entropy tables).
    ///
    /// [`ZstdParams::default`]: crate::ZstdParams::default
    pub fn from_bytes(bytes: &[u8]) -> Result<Dictionary, Error> {
        if bytes.is_empty() {
            return Err(Error::Dictionary {
                reason: "0 bytes: an empty dictionary is no dictionary".to_owned(),
            });
        }
        if DDict::try_create(bytes).is_none() {
            return Err(Error::Dictionary {
                reason: format!(
                    "zstd refuses these {} bytes: they start with the dictionary magic number \
                     but the entropy tables after it are corrupt or cut short",
                    bytes.len()
                ),
            });
        }
        let id = zstd_safe::get_dict_id_from_dict(bytes).map_or(0, |id| id.get());
        Ok(Dictionary(Arc::new(Inner {
            id,
            bytes: bytes.into(),
        })))
    }

    /// Trains a dictionary of at most `max_bytes` bytes from sample pages, with zstd's own
    /// trainer (`ZDICT_trainFromBuffer`: fastCover, its parameters optimised on the
    /// samples). The result has a random ID and starts with the magic number. Training
    /// takes CPU time, seconds for tens of MiB of samples (zstd tries several parameter
    /// sets on them; BENCHMARKS.md, "With a trained dictionary", has figures).
    ///
    /// zstd wants about a hundred times `max_bytes` of samples for a good dictionary, and
    /// at least 5 samples; a `max_bytes` of 64 KiB is what zram's documentation suggests.
    ///
    /// # Errors
    ///
    /// [`Error::Dictionary`] (`EINVAL`) where zstd cannot train one: too few samples or
    /// sample bytes ("Src size is incorrect"), a `max_bytes` under 256
    /// ("Destination buffer is too small"), samples with nothing in common to learn.
    pub fn train(samples: &[&[u8]], max_bytes: usize) -> Result<Dictionary, Error> {
        let sizes: Vec<usize> = samples.iter().map(|s| s.len()).collect();
        let flat = samples.concat();
        let mut buf = Vec::new();
        buf.try_reserve_exact(max_bytes)
            .map_err(|_| Error::NoMemory)?;
        zstd_safe::train_from_buffer(&mut buf, &flat, &sizes).map_err(|code| {
            Error::Dictionary {
                reason: format!(
                    "zstd could not train a dictionary of at most {max_bytes} bytes from {} \
                     samples ({} bytes): {}",
                    samples.len(),
                    flat.len(),
                    zstd_safe::get_error_name(code)
                ),
            }
        })?;
        Dictionary::from_bytes(&buf)
    }

    /// The dictionary's ID (`ZSTD_getDictID_fromDict`), which frames written with it carry
    /// in their header: 0 for a raw-content dictionary (its frames carry none).
    pub fn id(&self) -> u32 {
        self.0.id
    }

    /// The dictionary's bytes, as [`from_bytes`](Dictionary::from_bytes) takes them back.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0.bytes
    }
}

impl fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dictionary")
            .field("id", &self.0.id)
            .field("bytes", &self.0.bytes.len())
            .finish()
    }
}

/// Equal where the bytes are.
impl PartialEq for Dictionary {
    fn eq(&self, other: &Dictionary) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.bytes == other.0.bytes
    }
}

impl Eq for Dictionary {}

impl ZstdParams {
    /// Compress with this dictionary, and decompress the frames that name it (or, for a
    /// raw-content dictionary of ID 0, frames that name none). The transform digests it
    /// once (a `ZSTD_CDict` at the transform's level and a `ZSTD_DDict`), and every
    /// per-CPU workspace references those: memory for one copy, whatever the number of
    /// CPUs ([`Stats::dictionary_bytes`](crate::Stats::dictionary_bytes)). Replaces any
    /// dictionary set before.
    #[must_use]
    pub fn dictionary(mut self, dict: Dictionary) -> Self {
        self.dictionary = Some(dict);
        self
    }

    /// Also decompress frames that name this dictionary's ID, without compressing with it:
    /// a dictionary trained earlier, whose frames a swap layer still holds. Each frame is
    /// read with the dictionary its header names; a frame naming an ID the transform has
    /// no dictionary for is `EBADMSG`, on every path. May be given several times.
    #[must_use]
    pub fn decompression_dictionary(mut self, dict: Dictionary) -> Self {
        self.older.push(dict);
        self
    }

    /// The dictionary frames are compressed with, if any.
    pub fn compression_dictionary(&self) -> Option<&Dictionary> {
        self.dictionary.as_ref()
    }
}

/// A transform's dictionaries, digested once: the `ZSTD_CDict` its CCtxs reference and the
/// `ZSTD_DDict`s its DCtxs pick from by each frame's dictionary ID. Workspaces hold it by
/// an `Arc`.
pub(crate) struct Digested {
    cdict: Option<CDict<'static>>,
    /// By ID; at most one raw-content dictionary (ID 0).
    ddicts: Vec<(u32, DDict<'static>)>,
}

impl fmt::Debug for Digested {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Digested")
            .field("cdict", &self.cdict.is_some())
            .field(
                "ddicts",
                &self.ddicts.iter().map(|d| d.0).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Digested {
    /// Digests the parameters' dictionaries; `None` where there are none.
    pub(super) fn new(params: &ZstdParams) -> Result<Option<Arc<Digested>>, Error> {
        let all: Vec<&Dictionary> = params.dictionary.iter().chain(&params.older).collect();
        if all.is_empty() {
            return Ok(None);
        }
        let mut ddicts: Vec<(u32, DDict<'static>)> = Vec::with_capacity(all.len());
        let mut seen: Vec<&Dictionary> = Vec::new();
        for d in all {
            match seen.iter().find(|s| s.id() == d.id()) {
                Some(s) if *s == d => continue,
                Some(_) => {
                    return Err(Error::InvalidParameter {
                        reason: format!(
                            "two different dictionaries with ID {}: a frame could not tell \
                             which it needs",
                            d.id()
                        ),
                    });
                }
                None => {}
            }
            let ddict = DDict::try_create(d.as_bytes()).ok_or(Error::NoMemory)?;
            ddicts.push((d.id(), ddict));
            seen.push(d);
        }
        let cdict = match &params.dictionary {
            Some(d) => Some(CDict::try_create(d.as_bytes(), params.level).ok_or(Error::NoMemory)?),
            None => None,
        };
        Ok(Some(Arc::new(Digested { cdict, ddicts })))
    }

    pub(crate) fn cdict(&self) -> Option<&CDict<'static>> {
        self.cdict.as_ref()
    }

    /// The DDict a frame naming `id` is read with (for 0: the raw-content dictionary, if
    /// any; else none). `Err` where the frame names an ID the transform lacks.
    #[inline]
    pub(crate) fn ddict(&self, id: u32) -> Result<Option<&DDict<'static>>, ()> {
        match self.ddicts.iter().find(|d| d.0 == id) {
            Some(d) => Ok(Some(&d.1)),
            None if id == 0 => Ok(None),
            None => Err(()),
        }
    }

    /// Bytes of the digested dictionaries, as zstd counts them (`ZSTD_sizeof_CDict`,
    /// `ZSTD_sizeof_DDict`).
    pub(super) fn bytes(&self) -> usize {
        self.cdict.as_ref().map_or(0, |c| c.sizeof())
            + self.ddicts.iter().map(|d| d.1.sizeof()).sum::<usize>()
    }
}

/// A frame whose header names a dictionary ID (RFC 8878 §3.1.1.1.3) that the transform has
/// no dictionary for.
pub(super) const UNKNOWN_DICTIONARY: Error = Error::Corrupt {
    detail: "frame names a dictionary this transform lacks",
};

/// References the DDict a frame naming dictionary `id` is read with (none for 0 without a
/// raw-content dictionary), before zstd reads the frame. acomp picks it itself, from the
/// header it read: zstd's own pick (`ZSTD_d_refMultipleDDicts`) happens on its streaming
/// path only, after its one-shot decoder has already loaded the previous DDict's tables.
/// zstd takes a new reference only between frames; a range read that stopped mid-frame
/// leaves the stream inside one, so a refusal gets a session reset and a second try.
pub(super) fn select<'x>(dctx: &mut DCtx<'x>, dicts: &'x Digested, id: u32) -> Result<(), Error> {
    let ddict = dicts.ddict(id).map_err(|()| UNKNOWN_DICTIONARY)?;
    let set = |dctx: &mut DCtx<'x>| match ddict {
        Some(ddict) => dctx.ref_ddict(ddict),
        None => dctx.disable_dictionary(),
    };
    if set(dctx).is_err() {
        dctx.reset(ResetDirective::SessionOnly)
            .map_err(|c| zstd_error(c, 0))?;
        set(dctx).map_err(|c| zstd_error(c, 0))?;
    }
    Ok(())
}
