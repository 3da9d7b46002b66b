#!/usr/bin/env bash
# Ceph RADOS Gateway as a real S3 server for tests: Debian's packages at a pinned version, a
# one-node cluster (one monitor, one manager, one BlueStore OSD on a file, authentication off, pool size 1)
# bootstrapped in a temp dir without systemd, every daemon on 127.0.0.1, and a radosgw (beast) with
# a generated user. Source it, then:
#
#   start_ceph_rgw DATA_DIR   # exports CEPH_RGW_ENDPOINT, CEPH_RGW_ACCESS_KEY,
#                             # CEPH_RGW_SECRET_KEY, CEPH_RGW_REGION
#   stop_ceph_rgw             # kills the daemons it started, removes DATA_DIR unless
#                             # SAFEPUT_KEEP_S3_DATA=1
#
# Installing needs root (apt-get). A failure prints why and returns 1; s3server.sh decides whether
# that fails the test command (it does under CI=true).

# shellcheck source=apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

CEPH_VERSION="16.2.15+ds-0+deb12u2"
# radosgw-admin comes with radosgw; ceph (the CLI), monmaptool and ceph-authtool with ceph-common
# and ceph-base, which the daemons depend on.
ceph_packages=(radosgw ceph-mon ceph-osd ceph-mgr ceph-common ceph-base)
# Bounds for each wait; the cluster normally needs well under a minute on a shared 2-core machine.
ceph_start_timeout_s=${CEPH_START_TIMEOUT_S:-180}
# The ports the manager and OSD may bind above ms_bind_port_min.
ceph_bind_window=200
ceph_pids=()
ceph_data=""

ceph_fail() {
	echo "ceph.sh: $*" >&2
	return 1
}

ceph_installed_ok() {
	local p v
	for p in "${ceph_packages[@]}"; do
		v=$(dpkg-query -W -f='${Status} ${Version}' "$p" 2>/dev/null) || return 1
		[[ "$v" == "install ok installed $CEPH_VERSION" ]] || return 1
	done
}

# install_ceph: apt-get install of the pinned packages, skipped when they are already installed.
install_ceph() {
	if ceph_installed_ok; then
		return 0
	fi
	if [[ $(id -u) -ne 0 ]]; then
		ceph_fail "Ceph $CEPH_VERSION is not installed and installing it needs root (apt-get install ${ceph_packages[*]})"
		return 1
	fi
	if ! command -v apt-get >/dev/null; then
		ceph_fail "Ceph $CEPH_VERSION is not installed and there is no apt-get to install it (Debian 12 packages)"
		return 1
	fi
	if ! apt_install_pinned ceph.sh "$CEPH_VERSION" "${ceph_packages[@]}"; then
		ceph_fail "apt-get install of Ceph $CEPH_VERSION failed (output above); Ceph RGW cannot be tested"
		return 1
	fi
	if ! ceph_installed_ok; then
		ceph_fail "after apt-get install, the installed Ceph packages are not all at $CEPH_VERSION"
		return 1
	fi
}

# ceph_free_port [WINDOW_MIN]: a port below the kernel's ephemeral range (so no outgoing
# connection takes it between the check and the bind) with no socket of any state on it, and
# outside the manager's and OSD's bind window starting at WINDOW_MIN: they bind there before the
# gateway starts, and took its port once.
ceph_free_port() {
	local p low window=${1:-}
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	for _ in $(seq 1 50); do
		p=$((10000 + RANDOM % (low - 10000)))
		if [[ -n "$window" ]] && ((p >= window && p <= window + ceph_bind_window)); then
			continue
		fi
		if [[ -z "$(ss -Hant "( sport = :$p )" 2>/dev/null)" ]]; then
			echo "$p"
			return 0
		fi
	done
	echo "ceph.sh: no free port found" >&2
	return 1
}

# ceph_wait SECONDS WHAT CMD...: runs CMD every 0.5 s until it succeeds or SECONDS pass.
ceph_wait() {
	local timeout=$1 what=$2
	local deadline=$((SECONDS + timeout))
	shift 2
	until "$@" >/dev/null 2>&1; do
		if ((SECONDS >= deadline)); then
			echo "ceph.sh: timed out after $timeout s waiting for $what" >&2
			return 1
		fi
		if ! ceph_daemons_alive; then
			echo "ceph.sh: a daemon exited while waiting for $what" >&2
			return 1
		fi
		sleep 0.5
	done
}

ceph_daemons_alive() {
	local pid
	for pid in "${ceph_pids[@]}"; do
		kill -0 "$pid" 2>/dev/null || return 1
	done
}

ceph_cli() {
	ceph --conf "$ceph_conf" --connect-timeout 10 "$@"
}

ceph_start_failed() {
	echo "ceph.sh: start-up failed; last lines of each log in $ceph_data/log:" >&2
	local f
	for f in "$ceph_data"/log/*.log; do
		[[ -s "$f" ]] || continue
		echo "== $f" >&2
		tail -15 "$f" >&2
	done
	stop_ceph_rgw
	ceph_fail "Ceph RGW did not start"
}

# ceph_write_conf: the cluster's one configuration file, from the start-up's variables.
ceph_write_conf() {
	cat >"$ceph_conf" <<EOF
[global]
fsid = $fsid
mon_host = [v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_port_min = $port_min
ms_bind_port_max = $((port_min + ceph_bind_window))
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
auth_allow_insecure_global_id_reclaim = true
# radosgw defaults to secure-only mode towards the monitor, which auth "none" cannot offer.
ms_mon_client_mode = crc secure
keyring = $ceph_data/keyring
run_dir = $ceph_data/run
admin_socket = $ceph_data/run/\$cluster-\$name.asok
pid_file = $ceph_data/run/\$cluster-\$name.pid
log_file = $ceph_data/log/\$cluster-\$name.log
mon_cluster_log_file = $ceph_data/log/\$cluster.log
crash_dir = $ceph_data/crash
log_to_stderr = false
err_to_stderr = true
osd_pool_default_size = 1
osd_pool_default_min_size = 1
mon_allow_pool_size_one = true
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_max_pg_per_osd = 1000
osd_crush_chooseleaf_type = 0
mon_warn_on_pool_no_redundancy = false
mon_data_avail_warn = 1
mon_data_avail_crit = 0
# No HTTP listeners from manager modules (restful, dashboard, prometheus bind to all addresses).
mgr_initial_modules =

[mon]
mon_data = $ceph_data/mon/\$cluster-\$id

[mgr]
mgr_data = $ceph_data/mgr/\$cluster-\$id

[osd]
osd_data = $ceph_data/osd/\$cluster-\$id
# BlueStore on a sparse file in the data dir: the tests write more than RAM should hold (a
# 4 GiB memstore filled up during one package's tests, and a full OSD makes RGW hang). Freed
# space is not given back to the file system, and the allocator moves forward through the device
# before it reuses any: the file's size on disk grows toward bluestore_block_size whatever is
# live. 8 GiB holds what the tests keep at once (they remove their buckets as they end) and caps
# what a run takes of the disk.
osd_objectstore = bluestore
# Outside osd_data: BlueStore puts a "block" symlink there pointing at this file.
bluestore_block_path = $ceph_data/osd/ceph-0.block
bluestore_block_create = true
bluestore_block_size = 8589934592
bluestore_cache_size = 268435456
osd_memory_target = 939524096
osd_op_num_shards = 1
osd_op_num_threads_per_shard = 2

[client]
rgw_data = $ceph_data/rgw
rgw_frontends = beast endpoint=127.0.0.1:$rgw_port$rgw_tls
rgw_enable_usage_log = false
rgw_thread_pool_size = 64
# SSE: the testing KMS backend with the run's key (s3server.sh), and SSE-C over plain HTTP too.
rgw_crypt_s3_kms_backend = testing
rgw_crypt_s3_kms_encryption_keys = ${SAFEPUT_S3_KMS_KEY_ID:-safeput-kms-key}=${safeput_kms_secret:-$(head -c 32 /dev/urandom | base64)}
rgw_crypt_require_ssl = false
# Deleted objects' and aborted uploads' data is freed after a minute, not RGW's two hours: the
# tests remove their buckets as they end, and the OSD's file on disk grows only to what is live.
rgw_gc_obj_min_wait = 60
rgw_gc_processor_period = 30
EOF
}

# start_ceph_rgw DATA_DIR
start_ceph_rgw() {
	local data=${1:?usage: start_ceph_rgw DATA_DIR}
	install_ceph || return 1
	mkdir -p "$data"
	ceph_data=$(cd "$data" && pwd)
	ceph_conf="$ceph_data/ceph.conf"
	ceph_pids=()
	mkdir -p "$ceph_data"/{log,run,mon/ceph-a,mgr/ceph-x,osd/ceph-0,rgw}

	local fsid mon_v1 mon_v2 rgw_port rgw_tls rgw_tls_port port_min attempt t0=$SECONDS
	# Another process can take a checked port before the monitor binds it: then the monitor
	# exits and the whole monitor set-up is redone on new ports.
	for attempt in 1 2 3; do
		fsid=$(cat /proc/sys/kernel/random/uuid)
		# The manager and OSD bind inside this window; Ceph skips ports already in use, so the
		# other ports are picked outside it.
		port_min=$(ceph_free_port) || return 1
		mon_v1=$(ceph_free_port "$port_min") && mon_v2=$(ceph_free_port "$port_min") &&
			rgw_port=$(ceph_free_port "$port_min") || return 1
		# TLS on a second beast endpoint, with the test run's certificate (s3server.sh).
		rgw_tls="" rgw_tls_port=""
		if [[ -n "${SAFEPUT_S3_TLS_DIR:-}" ]]; then
			rgw_tls_port=$(ceph_free_port "$port_min") || return 1
			rgw_tls=" ssl_endpoint=127.0.0.1:$rgw_tls_port ssl_certificate=$SAFEPUT_S3_TLS_DIR/server.pem ssl_private_key=$SAFEPUT_S3_TLS_DIR/server.key"
		fi
		ceph_write_conf
		rm -rf "$ceph_data/mon/ceph-a" && mkdir -p "$ceph_data/mon/ceph-a"
		# Authentication is off, but the tools still read a keyring; one with a mon. key keeps them quiet.
		ceph-authtool --create-keyring "$ceph_data/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null &&
			monmaptool --clobber --create --fsid "$fsid" \
				--addv a "[v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]" "$ceph_data/monmap" >/dev/null &&
			ceph-mon --conf "$ceph_conf" --mkfs -i a --monmap "$ceph_data/monmap" \
				--keyring "$ceph_data/keyring" || {
			ceph_start_failed
			return 1
		}
		ceph-mon --conf "$ceph_conf" -i a -f >>"$ceph_data/log/mon.a.stderr" 2>&1 &
		ceph_pids=($!)
		if ceph_wait "$ceph_start_timeout_s" "the monitor" ceph_cli mon stat; then
			break
		fi
		if ((attempt == 3)) || kill -0 "${ceph_pids[0]}" 2>/dev/null; then
			ceph_start_failed
			return 1
		fi
		wait "${ceph_pids[0]}" 2>/dev/null || true
		echo "ceph.sh: the monitor exited (port taken?), retrying on other ports" >&2
	done

	ceph-mgr --conf "$ceph_conf" -i x -f >>"$ceph_data/log/mgr.x.stderr" 2>&1 &
	ceph_pids+=($!)

	local osd_uuid osd_id
	osd_uuid=$(cat /proc/sys/kernel/random/uuid)
	osd_id=$(ceph_cli osd new "$osd_uuid") && [[ "$osd_id" == 0 ]] &&
		ceph-osd --conf "$ceph_conf" -i 0 --mkfs --osd-uuid "$osd_uuid" \
			>>"$ceph_data/log/osd.0.stderr" 2>&1 || {
		ceph_start_failed
		return 1
	}
	ceph-osd --conf "$ceph_conf" -i 0 -f >>"$ceph_data/log/osd.0.stderr" 2>&1 &
	ceph_pids+=($!)
	ceph_wait "$ceph_start_timeout_s" "the OSD to be up" \
		bash -c "ceph --conf '$ceph_conf' --connect-timeout 10 osd dump 2>/dev/null | grep -q '^osd.0 up'" || {
		ceph_start_failed
		return 1
	}

	# The gateway creates its pools itself on first start.
	radosgw --conf "$ceph_conf" -n client.rgw.a -f >>"$ceph_data/log/rgw.a.stderr" 2>&1 &
	ceph_pids+=($!)
	ceph_wait "$ceph_start_timeout_s" "the gateway to answer S3 on 127.0.0.1:$rgw_port" \
		bash -c "curl -s -m 5 http://127.0.0.1:$rgw_port/ | grep -q ListAllMyBucketsResult" || {
		ceph_start_failed
		return 1
	}

	local access secret
	access="safeput$RANDOM$RANDOM"
	secret="$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')"
	radosgw-admin --conf "$ceph_conf" user create --uid safeput --display-name safeput \
		--access-key "$access" --secret-key "$secret" >/dev/null || {
		ceph_start_failed
		return 1
	}
	# RGW checks a SigV4 signature with whatever region the request names. us-east-1 makes the
	# SDKs omit CreateBucket's LocationConstraint, which RGW rejects unless it equals the
	# zonegroup's api_name ("default").
	local region=us-east-1
	export CEPH_RGW_ENDPOINT="http://127.0.0.1:$rgw_port"
	unset CEPH_RGW_TLS_ENDPOINT
	if [[ -n "$rgw_tls_port" ]] && ceph_wait 10 "the gateway's TLS endpoint on 127.0.0.1:$rgw_tls_port" \
		bash -c "curl -s -m 5 --cacert '$SAFEPUT_S3_TLS_DIR/ca.pem' https://127.0.0.1:$rgw_tls_port/ | grep -q ListAllMyBucketsResult"; then
		export CEPH_RGW_TLS_ENDPOINT="https://127.0.0.1:$rgw_tls_port"
	fi
	export CEPH_RGW_ACCESS_KEY="$access"
	export CEPH_RGW_SECRET_KEY="$secret"
	export CEPH_RGW_REGION="${region:-us-east-1}"
	echo "ceph.sh: Ceph $CEPH_VERSION RGW on $CEPH_RGW_ENDPOINT region $CEPH_RGW_REGION" \
		"(data $ceph_data, pids ${ceph_pids[*]}, up in $((SECONDS - t0)) s)" >&2
}

# stop_ceph_rgw: kills the daemons start_ceph_rgw started (by PID) and removes the data dir.
stop_ceph_rgw() {
	local pid i
	for ((i = ${#ceph_pids[@]} - 1; i >= 0; i--)); do
		kill "${ceph_pids[i]}" 2>/dev/null || true
	done
	for pid in "${ceph_pids[@]}"; do
		# A daemon that ignores SIGTERM for 10 s is killed.
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	ceph_pids=()
	if [[ -n "${ceph_data:-}" && "${SAFEPUT_KEEP_S3_DATA:-}" != "1" ]]; then
		rm -rf "$ceph_data"
	fi
	ceph_data=""
}
