//! Tensors as KServe V1 writes them: nested JSON arrays whose nesting is the shape, read into
//! a flat list of element tokens, and written back nested or flat.
//!
//! Elements stay the caller's own number tokens (borrowed from the body, never parsed into
//! floats and printed again), so a value crosses the bridge bit-exactly and is copied once,
//! into the translated body; binary-extension sections give values of their own type instead
//! (`elem`). A row of several inputs or outputs (`{"a": ..., "b": ...}`) feeds
//! one [`Nest`] per tensor, each below the batch dimension the rows make.

use crate::translate::DataType;
use crate::translate::json_in::reader::Reader;

pub(crate) use super::elem::{Elem, check, scalar, write_elem, write_str};
use super::numeric_run::{scan_leaf, write_list};

/// A tensor read from JSON or a binary section: its shape and its elements in row-major order.
#[derive(Debug, Default)]
pub(crate) struct Tensor<'a> {
    pub(crate) shape: Vec<usize>,
    pub(crate) elems: Vec<Elem<'a>>,
    /// The same elements in the raw form when they arrived that way (a binary section), so a
    /// raw destination takes them as they are.
    pub(crate) raw: Option<&'a [u8]>,
    /// The body the number tokens were read from (empty if unknown): the writer copies runs
    /// of adjacent tokens from it.
    pub(crate) src: &'a [u8],
}

/// Gathers one tensor from nested arrays, checking that every row at a depth has one length.
#[derive(Debug, Default)]
pub(crate) struct Nest<'a> {
    dims: Vec<Option<usize>>,
    leaf_depth: Option<usize>,
    elems: Vec<Elem<'a>>,
    src: &'a [u8],
}

const RAGGED: &str = "ragged tensor: rows of different lengths or depths";

// === impl Nest ===

impl<'a> Nest<'a> {
    /// Reads one value at `depth` (0 for a whole tensor, 1 for a row under a batch dimension).
    pub(crate) fn value(&mut self, r: &mut Reader<'a>, depth: usize) -> Result<(), String> {
        self.walk(r, depth, true)
    }

    /// [`Nest::value`]; `fast` tries [`scan_leaf`] on every array first (off only in tests
    /// comparing the two paths).
    pub(crate) fn walk(
        &mut self,
        r: &mut Reader<'a>,
        depth: usize,
        fast: bool,
    ) -> Result<(), String> {
        if r.peek() != Some(b'[') {
            let elem = scalar(r)?;
            return self.leaf(depth, elem);
        }
        if fast {
            let before = self.elems.len();
            let (elems, src) = (&mut self.elems, &mut self.src);
            let scanned = r.scan_with(|buf, at| {
                *src = buf;
                scan_leaf(buf, at, elems)
            });
            match scanned {
                // What the element-wise walk checks at each leaf, once for the row.
                Some(n) => {
                    self.leaf_slot(depth + 1)?;
                    return self.close(depth, n);
                }
                None => self.elems.truncate(before),
            }
        }
        let mut n = 0usize;
        r.array(|r| {
            n += 1;
            self.walk(r, depth + 1, fast)
        })?;
        self.close(depth, n)
    }

    /// Records an array of `n` values at `depth`, checking it against the rows before it.
    fn close(&mut self, depth: usize, n: usize) -> Result<(), String> {
        if self.leaf_depth.is_some_and(|l| l <= depth) {
            return Err(RAGGED.to_owned());
        }
        if self.dims.len() <= depth {
            self.dims.resize(depth + 1, None);
        }
        match self.dims.get_mut(depth) {
            Some(slot @ None) => *slot = Some(n),
            Some(Some(d)) if *d != n => return Err(RAGGED.to_owned()),
            _ => {}
        }
        Ok(())
    }

    /// Adds an element read elsewhere (a `{"b64": ...}` met while looking for names).
    pub(crate) fn leaf(&mut self, depth: usize, elem: Elem<'a>) -> Result<(), String> {
        self.leaf_slot(depth)?;
        self.elems.push(elem);
        Ok(())
    }

    /// Checks that an element may sit at `depth`.
    fn leaf_slot(&mut self, depth: usize) -> Result<(), String> {
        match self.leaf_depth {
            None => self.leaf_depth = Some(depth),
            Some(l) if l != depth => return Err(RAGGED.to_owned()),
            Some(_) => {}
        }
        if self.dims.get(depth).is_some_and(Option::is_some) {
            return Err(RAGGED.to_owned());
        }
        Ok(())
    }

    /// The tensor; `batch` is the number of rows when values were read at depth 1.
    pub(crate) fn finish(self, batch: Option<usize>) -> Result<Tensor<'a>, String> {
        let mut dims = self.dims;
        if let Some(b) = batch {
            match dims.first_mut() {
                Some(slot) => *slot = Some(b),
                None => dims.push(Some(b)),
            }
        }
        let depth = self
            .leaf_depth
            .unwrap_or_else(|| dims.iter().take_while(|d| d.is_some()).count());
        let mut shape = Vec::with_capacity(depth);
        for d in dims.iter().take(depth) {
            shape.push(d.ok_or_else(|| RAGGED.to_owned())?);
        }
        if self.leaf_depth.is_none() && shape.iter().product::<usize>() != 0 {
            return Err(RAGGED.to_owned());
        }
        Ok(Tensor {
            shape,
            elems: self.elems,
            raw: None,
            src: self.src,
        })
    }
}
/// OIP tensors (`{"name","datatype","shape","data"}` objects, comma-separated): the inputs
/// of a request to a v2 server, or the outputs of an answer to a v2 caller.
pub(crate) fn write_oip_tensors(
    out: &mut Vec<u8>,
    tensors: &[(&super::TensorSig, Tensor<'_>)],
) -> Result<(), String> {
    for (i, (sig, t)) in tensors.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"name\":");
        write_str(out, &sig.name);
        out.extend_from_slice(b",\"datatype\":\"");
        out.extend_from_slice(sig.datatype.as_str().as_bytes());
        out.extend_from_slice(b"\",\"shape\":");
        write_shape(out, &t.shape);
        out.extend_from_slice(b",\"data\":");
        write_flat(out, t, false)?;
        out.push(b'}');
    }
    Ok(())
}

/// The rows of tensors sharing their first (batch) dimension, comma-separated: row `r` of a
/// lone tensor as its nested slice, of several as an object keyed by their names (V1's row
/// format, both for `instances` and `predictions`).
pub(crate) fn write_rows(
    out: &mut Vec<u8>,
    batch: usize,
    tensors: &[(&super::TensorSig, &Tensor<'_>)],
) -> Result<(), String> {
    let named = tensors.len() > 1;
    for row in 0..batch {
        if row > 0 {
            out.push(b',');
        }
        if named {
            out.push(b'{');
        }
        for (i, (sig, t)) in tensors.iter().enumerate() {
            let inner = t.shape.get(1..).unwrap_or_default();
            let step = inner.iter().product::<usize>();
            let from = row.saturating_mul(step);
            let part = t
                .elems
                .get(from..from.saturating_add(step))
                .unwrap_or_default();
            if named {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, &sig.name);
                out.push(b':');
            }
            nested_in(out, inner, part, t.src, super::b64_named(sig))?;
        }
        if named {
            out.push(b'}');
        }
    }
    Ok(())
}

/// Writes a tensor as nested arrays of its shape (a bare element for shape `[]`), copying runs
/// of its number tokens from the body they were read from.
pub(crate) fn write_tensor(out: &mut Vec<u8>, t: &Tensor<'_>, b64: bool) -> Result<(), String> {
    nested_in(out, &t.shape, &t.elems, t.src, b64)
}

fn nested_in(
    out: &mut Vec<u8>,
    shape: &[usize],
    elems: &[Elem<'_>],
    src: &[u8],
    b64: bool,
) -> Result<(), String> {
    const EMPTY: &str = "an empty tensor has no scalar value";
    let Some((&n, inner)) = shape.split_first() else {
        return match elems.first() {
            Some(e) => write_elem(out, e, b64),
            None => Err(EMPTY.to_owned()),
        };
    };
    if inner.is_empty() {
        // A row of elements: one list (an element missing would have been a scalar of an
        // empty tensor).
        let row = elems.get(..n).ok_or_else(|| EMPTY.to_owned())?;
        out.push(b'[');
        write_list(out, row, src, b64)?;
        out.push(b']');
        return Ok(());
    }
    let step = inner.iter().product::<usize>();
    out.push(b'[');
    for i in 0..n {
        if i > 0 {
            out.push(b',');
        }
        let from = i.saturating_mul(step);
        let part = elems
            .get(from..from.saturating_add(step))
            .unwrap_or_default();
        nested_in(out, inner, part, src, b64)?;
    }
    out.push(b']');
    Ok(())
}

/// Writes a tensor's elements as one flat array (OIP `data`).
pub(crate) fn write_flat(out: &mut Vec<u8>, t: &Tensor<'_>, b64: bool) -> Result<(), String> {
    out.push(b'[');
    write_list(out, &t.elems, t.src, b64)?;
    out.push(b']');
    Ok(())
}

/// Whether a tensor of `shape` fits the signature's `want` (`-1` = any size).
pub(crate) fn fits(shape: &[usize], want: &[i64]) -> bool {
    shape.len() == want.len()
        && shape
            .iter()
            .zip(want)
            .all(|(&s, &w)| w < 0 || u64::try_from(w).is_ok_and(|w| w == s as u64))
}

/// Writes an OIP `shape` array.
pub(crate) fn write_shape(out: &mut Vec<u8>, shape: &[usize]) {
    out.push(b'[');
    for (i, d) in shape.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(d.to_string().as_bytes());
    }
    out.push(b']');
}

/// An OIP `shape` array.
pub(crate) fn shape(r: &mut Reader<'_>) -> Result<Vec<i64>, String> {
    let mut out = Vec::new();
    r.array(|r| {
        let d = match scalar(r)? {
            Elem::Num { text, int: true } => text.parse::<i64>().ok(),
            _ => None,
        };
        out.push(d.ok_or_else(|| "shape entries must be integers".to_owned())?);
        Ok(())
    })?;
    Ok(out)
}

/// The datatype of an OIP `datatype` string.
pub(crate) fn datatype(text: &str) -> Result<DataType, String> {
    DataType::parse(text).ok_or_else(|| format!("unknown datatype {text:?}"))
}
