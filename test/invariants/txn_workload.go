package invariants

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TxnLoadConfig configures StartTxnLoad.
type TxnLoadConfig struct {
	Seeds []string
	Topic string
	// Producers transactional producers (transactional ids
	// "<IDPrefix>-0".."<IDPrefix>-<n-1>"), each running transactions of
	// PerTxn records one after another; every AbortEvery-th is aborted
	// (0: never).
	Producers, PerTxn, AbortEvery int
	IDPrefix                      string
	// Logf, when set, gets the first few errors.
	Logf func(format string, args ...any)
}

// TxnLoad is a running transactional workload: it records every
// transaction with what its producer learned of it (Txn), for
// CheckTransactions.
type TxnLoad struct {
	cfg  TxnLoadConfig
	stop chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	txns   []Txn
	logged int
}

// StartTxnLoad starts the producers. A producer whose transaction fails
// aborts what it buffered and the transaction, as franz-go asks; one that
// cannot is replaced by a new client with the same transactional id,
// whose InitProducerId fences the old one.
func StartTxnLoad(cfg TxnLoadConfig) *TxnLoad {
	if cfg.IDPrefix == "" {
		cfg.IDPrefix = "load"
	}
	l := &TxnLoad{cfg: cfg, stop: make(chan struct{})}
	for i := range cfg.Producers {
		l.wg.Add(1)
		go l.run(i)
	}
	return l
}

func (l *TxnLoad) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Logf != nil && l.logged < 10 {
		l.logged++
		l.cfg.Logf(format, args...)
	}
}

func (l *TxnLoad) record(t Txn) {
	l.mu.Lock()
	l.txns = append(l.txns, t)
	l.mu.Unlock()
}

func (l *TxnLoad) newProducer(id string) *kgo.Client {
	for {
		cl, err := newClient(kgo.SeedBrokers(l.cfg.Seeds...), kgo.TransactionalID(id),
			kgo.DefaultProduceTopic(l.cfg.Topic), kgo.TransactionTimeout(20*time.Second), kgo.RetryTimeout(40*time.Second),
			kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }))
		if err == nil {
			return cl
		}
		l.logf("%s: new client: %v", id, err)
		select {
		case <-l.stop:
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (l *TxnLoad) run(i int) {
	defer l.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-l.stop
		// The transaction in flight may finish for 30 s more; then its
		// calls are cut and it is recorded unsure.
		select {
		case <-time.After(30 * time.Second):
			cancel()
		case <-ctx.Done():
		}
	}()
	id := l.cfg.IDPrefix + "-" + strconv.Itoa(i)
	p := l.newProducer(id)
	defer func() {
		if p != nil {
			p.Close()
		}
	}()
	for seq := 0; p != nil; seq++ {
		select {
		case <-l.stop:
			return
		default:
		}
		t := Txn{Producer: id, Seq: seq, Values: make([]string, l.cfg.PerTxn)}
		for j := range t.Values {
			t.Values[j] = fmt.Sprintf("%s-r%d-%d", id, seq, j)
		}
		if err := p.BeginTransaction(); err != nil {
			l.logf("%s: begin: %v", id, err)
			p.Close()
			p = l.newProducer(id)
			continue
		}
		var err error
		for j := 0; err == nil && j < len(t.Values); j++ {
			err = p.ProduceSync(ctx, &kgo.Record{Key: []byte(strconv.Itoa(j)), Value: []byte(t.Values[j])}).FirstErr()
		}
		commit := l.cfg.AbortEvery == 0 || seq%l.cfg.AbortEvery != l.cfg.AbortEvery-1
		t.Status = TxnUnsure
		if err == nil {
			if err = p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err == nil {
				t.Status = TxnAborted
				if commit {
					t.Status = TxnCommitted
				}
			}
		}
		l.record(t)
		if err != nil {
			l.logf("%s: transaction %d: %v", id, seq, err)
			actx, acancel := context.WithTimeout(ctx, 30*time.Second)
			aerr := p.AbortBufferedRecords(actx)
			if aerr == nil {
				aerr = p.EndTransaction(actx, kgo.TryAbort)
			}
			acancel()
			if aerr != nil {
				p.Close()
				p = l.newProducer(id)
			}
			select {
			case <-l.stop:
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// Txns is every transaction recorded so far.
func (l *TxnLoad) Txns() []Txn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Txn(nil), l.txns...)
}

// Stop stops the producers (each finishes the transaction it is in) and
// returns every transaction.
func (l *TxnLoad) Stop() []Txn {
	close(l.stop)
	l.wg.Wait()
	return l.Txns()
}

// ReadCommitted reads every partition of topic from its start as a
// read_committed consumer, once no transaction is open on it (the last
// stable offset has reached the high watermark everywhere: the markers of
// every ended transaction are written), until no record has arrived for
// quiet.
func ReadCommitted(ctx context.Context, seeds []string, topic string, quiet time.Duration) ([]Record, error) {
	adm, err := newClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	ka := kadm.NewClient(adm)
	for {
		hw, err1 := ka.ListEndOffsets(ctx, topic)
		lso, err2 := ka.ListCommittedOffsets(ctx, topic)
		stable := err1 == nil && err2 == nil && hw.Error() == nil && lso.Error() == nil && len(hw[topic]) > 0
		if stable {
			for p, o := range hw[topic] {
				if lso[topic][p].Offset != o.Offset {
					stable = false
				}
			}
		}
		if stable {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("invariants: %s: a transaction stays open (last stable offsets %v, high watermarks %v): %w", topic, lso, hw, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	cl, err := newClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []Record
	last := time.Now()
	for time.Since(last) < quiet {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return recs, fmt.Errorf("invariants: reading %s read_committed: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
			last = time.Now()
		})
	}
	return recs, nil
}
