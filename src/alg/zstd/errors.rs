//! zstd's error codes in acomp's terms: the kind (`ENOSPC`, `EBADMSG`, `EINVAL`,
//! `ENOMEM`) and, for a corrupt source, what is wrong with it.

use zstd_safe::zstd_sys::ZSTD_ErrorCode as Code;

use crate::Error;

/// Maps a zstd error code to an [`Error`]. `capacity` is the destination's size, for
/// `dstSize_tooSmall`.
pub(crate) fn zstd_error(code: usize, capacity: usize) -> Error {
    let is = |kind| zstd_safe::is_error_kind(code, kind);
    if is(Code::ZSTD_error_dstSize_tooSmall) {
        Error::NoSpace {
            needed: None,
            capacity,
        }
    } else if is(Code::ZSTD_error_memory_allocation) {
        Error::NoMemory
    } else if is(Code::ZSTD_error_parameter_unsupported)
        || is(Code::ZSTD_error_parameter_outOfBound)
        || is(Code::ZSTD_error_parameter_combination_unsupported)
    {
        Error::InvalidParameter {
            reason: zstd_safe::get_error_name(code).to_owned(),
        }
    } else {
        // Everything else is something zstd found wrong in the input, including a frame
        // that needs a dictionary ("Dictionary mismatch"): no destination helps.
        Error::Corrupt {
            detail: corrupt_detail(code),
        }
    }
}

/// What a zstd error code found in a source means, in acomp's words, with zstd's own name
/// (`ZSTD_getErrorName`) in parentheses: zstd's names describe its own buffers and
/// dictionaries, where a user needs to know what is wrong with the source ("Destination
/// buffer is too small" from a decoder whose buffer fits any valid frame, "Dictionary is
/// corrupted" for a frame that uses no dictionary).
pub(crate) fn corrupt_detail(code: usize) -> &'static str {
    let is = |kind| zstd_safe::is_error_kind(code, kind);
    if is(Code::ZSTD_error_dstSize_tooSmall) {
        // Only the stream path maps this code here: its output buffer holds any valid block.
        "a block decodes to more than the frame's block maximum (zstd: Destination buffer is too small)"
    } else if is(Code::ZSTD_error_corruption_detected) {
        "a block's content is corrupt (zstd: Data corruption detected)"
    } else if is(Code::ZSTD_error_checksum_wrong) {
        "the content does not match the frame's checksum (zstd: Restored data doesn't match checksum)"
    } else if is(Code::ZSTD_error_dictionary_corrupted) {
        "a block's entropy tables are corrupt or repeat tables no earlier block gave (zstd: Dictionary is corrupted)"
    } else if is(Code::ZSTD_error_dictionary_wrong) {
        "the frame names a dictionary this transform lacks (zstd: Dictionary mismatch)"
    } else if is(Code::ZSTD_error_srcSize_wrong) {
        "the frame's content size does not match its blocks (zstd: Src size is incorrect)"
    } else if is(Code::ZSTD_error_literals_headerWrong) {
        "a block's literals header is corrupt (zstd: Header of Literals' block doesn't respect format specification)"
    } else if is(Code::ZSTD_error_tableLog_tooLarge)
        || is(Code::ZSTD_error_maxSymbolValue_tooLarge)
        || is(Code::ZSTD_error_maxSymbolValue_tooSmall)
    {
        "a block's entropy table description is corrupt (zstd: an entropy table out of range)"
    } else if is(Code::ZSTD_error_frameParameter_unsupported) {
        "the frame header sets a reserved bit (zstd: Unsupported frame parameter)"
    } else if is(Code::ZSTD_error_prefix_unknown) {
        "not a zstd frame (zstd: Unknown frame descriptor)"
    } else {
        zstd_safe::get_error_name(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_codes_map_to_kinds() {
        let code = |c: Code| (c as usize).wrapping_neg();
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_dstSize_tooSmall), 7),
            Error::NoSpace {
                needed: None,
                capacity: 7
            }
        );
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_checksum_wrong), 0),
            Error::Corrupt {
                detail: "the content does not match the frame's checksum (zstd: Restored data doesn't match checksum)"
            }
        );
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_dictionary_wrong), 0).errno(),
            libc::EBADMSG
        );
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_memory_allocation), 0),
            Error::NoMemory
        );
        assert_eq!(
            zstd_error(code(Code::ZSTD_error_parameter_outOfBound), 0).errno(),
            libc::EINVAL
        );
    }
}
