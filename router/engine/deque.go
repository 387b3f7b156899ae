package engine

// deque is the waiting queue: FCFS at the back, preempted requests back at
// the front.
type deque struct {
	items []*seq
	head  int
}

func (d *deque) len() int { return len(d.items) - d.head }

func (d *deque) front() *seq { return d.items[d.head] }

func (d *deque) pushBack(s *seq) { d.items = append(d.items, s) }

func (d *deque) pushFront(s *seq) {
	if d.head > 0 {
		d.head--
		d.items[d.head] = s
		return
	}
	d.items = append(d.items, nil)
	copy(d.items[1:], d.items)
	d.items[0] = s
}

func (d *deque) popFront() *seq {
	s := d.items[d.head]
	d.items[d.head] = nil
	d.head++
	if d.head == len(d.items) { // empty: reuse the array from its start
		d.items, d.head = d.items[:0], 0
	} else if d.head > 1024 && d.head > len(d.items)/2 {
		n := copy(d.items, d.items[d.head:])
		clear(d.items[n:])
		d.items, d.head = d.items[:n], 0
	}
	return s
}

func (d *deque) remove(s *seq) {
	for i := d.head; i < len(d.items); i++ {
		if d.items[i] == s {
			copy(d.items[i:], d.items[i+1:])
			d.items[len(d.items)-1] = nil
			d.items = d.items[:len(d.items)-1]
			return
		}
	}
}
