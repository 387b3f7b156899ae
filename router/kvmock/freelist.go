package kvmock

// freeList is the queue of physical blocks no running request references,
// least recently freed at the head: the head is the next block a new
// allocation takes (and evicts, if it holds a cached digest). As in vLLM, a
// block leaves the list when a request reuses it and rejoins at the tail
// when its last user finishes.
type freeList struct {
	head, tail *physBlock
	n          int
}

func (l *freeList) pushTail(b *physBlock) {
	b.prev, b.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = b
	} else {
		l.head = b
	}
	l.tail = b
	b.free = true
	l.n++
}

func (l *freeList) remove(b *physBlock) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		l.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		l.tail = b.prev
	}
	b.prev, b.next = nil, nil
	b.free = false
	l.n--
}

func (l *freeList) popHead() *physBlock {
	b := l.head
	if b != nil {
		l.remove(b)
	}
	return b
}
