#!/bin/busybox sh
# rp-vm guest init (see tests/vm/README.md).
#
# Stage 1 runs as PID 1 from the initramfs under busybox: it loads the kernel
# modules, mounts the host's root read-only over 9p, mounts the rp-vm control
# share and every extra share (read-write, at the same absolute path as on the
# host), then runs stage 2 of this same file chrooted into the host's root with
# the host's /bin/sh, and finally powers the machine off.
#
# Stage 2 (POSIX sh, runs with the host's tools) brings up the network and the
# Soft-RoCE device, checks it, and runs the command. Everything it needs comes
# from the control share (/run/rp-vm inside the chroot):
#   config   shell assignments written by rp-vm (RP_VM_GUEST, RP_VM_ADDR, ...)
#   shares   one "TAG PATH" per line
#   env      exported variables for the command
#   cmd      the command line, run with sh -c
# and it writes back:
#   stdout, stderr   the command's output
#   status           its exit status (125: setup failure, see setup.log)
#   setup.log        network/rxe setup log and diagnostics

RP_MNT_OPTS=trans=virtio,version=9p2000.L,msize=512000

log() { echo "<2>rp-vm-init: $*" >/dev/kmsg 2>/dev/null || echo "rp-vm-init: $*"; }

# ---------------------------------------------------------------- stage 2 --
if [ "${1:-}" = stage2 ]; then
	PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	export PATH
	ctl=/run/rp-vm
	. "$ctl/config"

	setup_fail() {
		echo "setup failure: $*" >>"$ctl/setup.log"
		{
			echo "--- ip addr"; ip addr 2>&1
			echo "--- rdma link"; rdma link 2>&1
			echo "--- ibv_devinfo"; ibv_devinfo 2>&1
			echo "--- ls -l /dev/infiniband"; ls -l /dev/infiniband 2>&1
			echo "--- dmesg (tail)"; dmesg 2>&1 | tail -n 20
		} >>"$ctl/setup.log" 2>&1
		echo 125 >"$ctl/status.tmp" && mv "$ctl/status.tmp" "$ctl/status"
		exit 125
	}
	run() {
		echo "+ $*" >>"$ctl/setup.log"
		"$@" >>"$ctl/setup.log" 2>&1 || setup_fail "'$*' failed"
	}

	: >"$ctl/setup.log"
	hostname "rp-vm-g$RP_VM_GUEST" 2>/dev/null || true
	run ip link set lo up

	if [ "$RP_VM_MODE" = run ]; then
		if [ "$RP_VM_GUESTS" = 1 ]; then
			run ip link add "$RP_VM_NETDEV" type dummy
		else
			# The single virtio NIC: whatever is not lo.
			dev=
			for i in 1 2 3 4 5 6 7 8 9 10; do
				for d in /sys/class/net/*; do
					d=${d##*/}
					[ "$d" = lo ] || [ "$d" = "$RP_VM_NETDEV" ] || dev=$d
				done
				[ -n "$dev" ] || [ -e "/sys/class/net/$RP_VM_NETDEV" ] && break
				sleep 0.5
			done
			[ -z "$dev" ] || run ip link set "$dev" name "$RP_VM_NETDEV"
		fi
		run ip link set "$RP_VM_NETDEV" mtu "$RP_VM_MTU"
		run ip addr add "$RP_VM_ADDR/24" dev "$RP_VM_NETDEV"
		run ip link set "$RP_VM_NETDEV" up
		run rdma link add "$RP_VM_RXE" type rxe netdev "$RP_VM_NETDEV"

		# Wait for the port to become ACTIVE and the device nodes to appear.
		ok=
		i=0
		while [ $i -lt 100 ]; do
			if rdma link show "$RP_VM_RXE/1" 2>/dev/null | grep -q 'state ACTIVE' &&
				ibv_devinfo -d "$RP_VM_RXE" 2>/dev/null | grep -q PORT_ACTIVE &&
				[ -c /dev/infiniband/uverbs0 ] && [ -c /dev/infiniband/rdma_cm ]; then
				ok=1
				break
			fi
			sleep 0.1
			i=$((i + 1))
		done
		[ -n "$ok" ] || setup_fail "$RP_VM_RXE is not ACTIVE (or /dev/infiniband is incomplete)"
		{
			echo "--- rdma link"; rdma link
			echo "--- ibv_devinfo"; ibv_devinfo -d "$RP_VM_RXE"
		} >>"$ctl/setup.log" 2>&1
		if [ "$RP_VM_GUESTS" = 2 ]; then
			# Barrier: start the commands once both guests are set up (the
			# other one's failure is reported by rp-vm, so do not wait forever).
			. "$ctl/env"
			: >"$RP_VM_SYNC/.rp-vm-ready-g$RP_VM_GUEST"
			peer=$((1 - RP_VM_GUEST))
			i=0
			while [ ! -e "$RP_VM_SYNC/.rp-vm-ready-g$peer" ] && [ $i -lt 1200 ]; do
				sleep 0.1
				i=$((i + 1))
			done
			# Resolve the neighbour now rather than in the first connect.
			busybox ping -c 1 -W 5 "$RP_VM_PEER_ADDR" >>"$ctl/setup.log" 2>&1 || true
		fi
		echo "setup ok" >>"$ctl/setup.log"
		log "$RP_VM_RXE ready"
	fi

	cmd=$(cat "$ctl/cmd")
	# shellcheck disable=SC1091
	. "$ctl/env"
	cd "$RP_VM_CWD" || setup_fail "cannot cd to $RP_VM_CWD"
	sh -c "$cmd" >"$ctl/stdout" 2>"$ctl/stderr" </dev/null
	rc=$?
	log "command exited with $rc"
	echo "$rc" >"$ctl/status.tmp" && mv "$ctl/status.tmp" "$ctl/status"
	exit "$rc"
fi

# ---------------------------------------------------------------- stage 1 --
PATH=/bin
export PATH
/bin/busybox mkdir -p /proc /sys /dev /ctl /newroot
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
log "stage 1"

halt() {
	sync
	poweroff -f
	sleep 60
}
die() {
	log "FATAL: $*"
	dmesg | tail -n 40 >/dev/console 2>&1
	halt
}

while read -r mod args; do
	[ -n "$mod" ] || continue
	# shellcheck disable=SC2086
	insmod "/mods/$mod" $args || die "insmod $mod failed"
done </mods/order
log "modules loaded"

i=0
until mount -t 9p -o "$RP_MNT_OPTS" rpctl /ctl 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 50 ] || die "cannot mount the rp-vm control share"
	sleep 0.1
done
. /ctl/config

stage1_fail() {
	log "setup failure: $*"
	echo "setup failure: $*" >>/ctl/setup.log
	echo 125 >/ctl/status.tmp && mv /ctl/status.tmp /ctl/status
	halt
}

mount -t 9p -o "$RP_MNT_OPTS,cache=loose,ro" hostroot /newroot ||
	stage1_fail "cannot mount the host root"
r=/newroot
mount -t proc proc $r/proc || stage1_fail "mount proc"
mount -t sysfs sysfs $r/sys || stage1_fail "mount sysfs"
mount -t devtmpfs devtmpfs $r/dev || stage1_fail "mount devtmpfs"
mkdir -p $r/dev/pts $r/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts $r/dev/pts || true
for d in /dev/shm /tmp /run /var/tmp; do
	[ -d "$r$d" ] || continue
	mount -t tmpfs -o mode=1777 tmpfs "$r$d" || stage1_fail "mount tmpfs on $d"
done
chmod 755 $r/run
mkdir -p $r/run/rp-vm $r/run/lock
mount --bind /ctl $r/run/rp-vm || stage1_fail "bind the control share"
# Shares, parents before children (rp-vm writes them sorted).
while read -r tag path; do
	[ -n "$tag" ] || continue
	[ -d "$r$path" ] || mkdir -p "$r$path" || stage1_fail "mkdir $path"
	mount -t 9p -o "$RP_MNT_OPTS" "$tag" "$r$path" || stage1_fail "cannot mount $path"
done </ctl/shares
cp /init $r/run/rp-vm-init.sh

log "stage 2"
chroot $r /bin/sh /run/rp-vm-init.sh stage2 </dev/null >/dev/console 2>&1
log "done, status $(cat /ctl/status 2>/dev/null || echo none)"
umount $r/run/rp-vm 2>/dev/null
halt
