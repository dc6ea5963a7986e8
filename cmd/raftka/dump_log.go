package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/raftka/raftka/storage"
	"github.com/urfave/cli/v2"
)

// dump-log prints the contents of segment (.log), offset index (.index),
// time index (.timeindex), aborted-transaction index (.txnindex) and
// producer snapshot (.snapshot) files the way kafka-dump-log.sh does; a
// segment's control batches always show their record (the marker type and
// coordinator epoch of a transaction marker). It reads files only; it never repairs them. A
// corrupt file prints everything up to the damage, then fails with the file
// and position.
func init() {
	register(&cli.Command{
		Name:      "dump-log",
		Usage:     "print the batches of segment, index, timeindex, txnindex or producer snapshot files",
		ArgsUsage: "FILES...",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "print-data", Usage: "also print each record's key, value and headers (compressed batches are decompressed)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return errors.New("dump-log: give one or more .log, .index, .timeindex, .txnindex or .snapshot files")
			}
			var failed []string
			for _, path := range c.Args().Slice() {
				if err := dumpFile(c.App.Writer, path, c.Bool("print-data")); err != nil {
					fmt.Fprintf(c.App.ErrWriter, "raftka dump-log: %v\n", err)
					failed = append(failed, path)
				}
			}
			if len(failed) > 0 {
				return cli.Exit(fmt.Sprintf("dump-log: %d of %d files failed: %s", len(failed), c.NArg(), strings.Join(failed, ", ")), 1)
			}
			return nil
		},
	})
}

func dumpFile(w io.Writer, path string, printData bool) error {
	fmt.Fprintf(w, "Dumping %s\n", path)
	base, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), 10, 64)
	if err != nil {
		base = 0 // not named by a base offset: relative offsets are printed as is
	}
	switch filepath.Ext(path) {
	case ".log":
		return dumpSegment(w, path, printData)
	case ".index":
		return dumpIndex(w, path, 8, func(e []byte) string {
			return fmt.Sprintf("offset: %d position: %d", base+int64(binary.BigEndian.Uint32(e)), binary.BigEndian.Uint32(e[4:]))
		})
	case ".timeindex":
		return dumpIndex(w, path, 12, func(e []byte) string {
			return fmt.Sprintf("timestamp: %d offset: %d", int64(binary.BigEndian.Uint64(e)), base+int64(binary.BigEndian.Uint32(e[8:])))
		})
	case ".txnindex":
		return dumpTxnIndex(w, path)
	case ".snapshot":
		return dumpProducerSnapshot(w, path)
	}
	return fmt.Errorf("%s: unknown file type (want .log, .index, .timeindex, .txnindex or .snapshot)", path)
}

// dumpTxnIndex prints an aborted-transaction index, one line per entry as
// kafka-dump-log.sh does, up to the first entry that does not parse.
func dumpTxnIndex(w io.Writer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	whole := len(data) - len(data)%storage.AbortedTxnSize
	entries, err := storage.ParseTxnIndex(data[:whole])
	if err != nil {
		// Print the entries before the damage.
		for n := whole - storage.AbortedTxnSize; n >= 0 && entries == nil; n -= storage.AbortedTxnSize {
			entries, _ = storage.ParseTxnIndex(data[:n])
		}
	}
	for _, a := range entries {
		fmt.Fprintf(w, "version: 0 producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n", a.ProducerID, a.FirstOffset, a.LastOffset, a.LastStableOffset)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if whole != len(data) {
		return fmt.Errorf("%s: corrupt at position %d: %d trailing bytes, not a whole %d-byte entry", path, whole, len(data)-whole, storage.AbortedTxnSize)
	}
	return nil
}

// dumpProducerSnapshot prints a producer-state snapshot: one line per
// producer as kafka-dump-log.sh prints Kafka's, then one per batch it
// remembers (ours keeps the last five, Kafka's only the last).
func dumpProducerSnapshot(w io.Writer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	snap, err := storage.ParseProducerSnapshot(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintf(w, "endOffset: %d producers: %d\n", snap.EndOffset, len(snap.Producers))
	for _, p := range snap.Producers {
		fmt.Fprintf(w, "producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %d lastTimestamp: %d lastSequence: %d batches: %d\n",
			p.ProducerID, p.Epoch, p.CoordinatorEpoch, p.CurrentTxnFirstOffset, p.LastTimestamp, p.LastSequence, len(p.Batches))
		for _, b := range p.Batches {
			fmt.Fprintf(w, "| firstSequence: %d lastSequence: %d firstOffset: %d lastOffset: %d offsetDelta: %d timestamp: %d\n",
				b.FirstSeq, b.LastSeq, b.FirstOffset, b.LastOffset, b.LastOffset-b.FirstOffset, b.Timestamp)
		}
	}
	return nil
}

func dumpIndex(w io.Writer, path string, size int, line func([]byte) string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for pos := 0; pos+size <= len(data); pos += size {
		e := data[pos : pos+size]
		if pos > 0 && allZero(e) {
			// The preallocated tail of an active segment's index.
			break
		}
		fmt.Fprintln(w, line(e))
	}
	if len(data)%size != 0 {
		return fmt.Errorf("%s: corrupt at position %d: %d trailing bytes, not a whole %d-byte entry", path, len(data)-len(data)%size, len(data)%size, size)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func dumpSegment(w io.Writer, path string, printData bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	var hdr [storage.BatchHeaderSize]byte
	var buf []byte
	for pos := int64(0); pos < end; {
		if end-pos < storage.BatchHeaderSize {
			return fmt.Errorf("%s: corrupt at position %d: %d bytes left, a batch header needs %d", path, pos, end-pos, storage.BatchHeaderSize)
		}
		if _, err := f.ReadAt(hdr[:], pos); err != nil {
			return fmt.Errorf("%s: position %d: %w", path, pos, err)
		}
		n, err := storage.BatchSize(hdr[:])
		if err != nil {
			return fmt.Errorf("%s: corrupt at position %d: %w", path, pos, err)
		}
		if int64(n) > end-pos {
			return fmt.Errorf("%s: corrupt at position %d: batch of %d bytes but only %d left", path, pos, n, end-pos)
		}
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := f.ReadAt(buf, pos); err != nil {
			return fmt.Errorf("%s: position %d: %w", path, pos, err)
		}
		b := storage.Batch(buf)
		if b.Magic() != 2 {
			return fmt.Errorf("%s: corrupt at position %d: magic %d, only v2 batches are supported", path, pos, b.Magic())
		}
		tsType := "CreateTime"
		if b.LogAppendTime() {
			tsType = "LogAppendTime"
		}
		fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t position: %d CreateTime: %d MaxTimestamp: %d timestampType: %s size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
			b.BaseOffset(), b.LastOffset(), b.RecordCount(), b.BaseSequence(), b.LastSequence(), b.ProducerID(), b.ProducerEpoch(),
			b.PartitionLeaderEpoch(), b.Transactional(), b.Control(), pos, b.BaseTimestamp(), b.MaxTimestamp(), tsType, n, b.Magic(),
			b.Compression(), b.CRC(), b.CRCValid())
		switch {
		case b.Control():
			printControl(w, b, tsType)
		case printData:
			printRecords(w, b, tsType)
		}
		pos += int64(n)
	}
	return nil
}

// printRecords prints each record of b, decompressing them if needed; a
// batch whose records do not decode gets one line saying why.
func printRecords(w io.Writer, b storage.Batch, tsType string) {
	err := b.Records(func(r storage.Record) bool {
		keys := make([]string, len(r.Headers))
		for i, h := range r.Headers {
			keys[i] = h.Key
		}
		fmt.Fprintf(w, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s] key: %s payload: %s\n",
			r.Offset, tsType, r.Timestamp, size(r.Key), size(r.Value), r.Sequence, strings.Join(keys, ","), r.Key, r.Value)
		return true
	})
	if err != nil {
		fmt.Fprintf(w, "| records not decoded: %v\n", err)
	}
}

// printControl prints a control batch's records as kafka-dump-log.sh
// does: a transaction marker's type and coordinator epoch, or the control
// type of another kind.
func printControl(w io.Writer, b storage.Batch, tsType string) {
	err := b.Records(func(r storage.Record) bool {
		fmt.Fprintf(w, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: []", r.Offset, tsType, r.Timestamp, size(r.Key), size(r.Value), r.Sequence)
		typ, epoch, err := storage.ParseControlRecord(r.Key, r.Value)
		switch {
		case err != nil:
			fmt.Fprintf(w, " control record not decoded: %v\n", err)
		case typ == storage.ControlAbort || typ == storage.ControlCommit:
			fmt.Fprintf(w, " endTxnMarker: %v coordinatorEpoch: %d\n", typ, epoch)
		default:
			fmt.Fprintf(w, " controlType: %v\n", typ)
		}
		return true
	})
	if err != nil {
		fmt.Fprintf(w, "| records not decoded: %v\n", err)
	}
}

func size(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}
