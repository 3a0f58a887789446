# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_authtime_global_optspecs
    string join \n h/help V/version
end

function __fish_authtime_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_authtime_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_authtime_using_subcommand
    set -l cmd (__fish_authtime_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c authtime -n "__fish_authtime_needs_command" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_needs_command" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "mac" -d 'Compute, verify and list message authentication codes'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "hash" -d 'Hash a message with MD5 or with RFC 1810\'s K-way interleaved MD5'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "serve" -d 'Serve NTP (plain, symmetric-key authenticated, and NTS with NTS-KE) until SIGTERM'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "config" -d 'Work with `authtime serve` configuration files'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "query" -d 'Ask an NTP server for the time, optionally authenticated with a symmetric key or NTS'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "keygen" -d 'Write a new key file that chrony, ntpd and NTPsec read'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "nts" -d 'Network Time Security (RFC 8915) tools'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "tesla" -d 'TESLA (RFC 4082) broadcast authentication: key pairs, multicast sender and receiver'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "broadcast" -d 'NTP broadcast (mode 5) authenticated with TESLA: multicast server and listener'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "status" -d 'What `authtime serve` announces about its clock now (stratum, leap, root dispersion, or unsynchronized), and why'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "roughtime" -d 'Roughtime (RFC 10049 and the drafts\' 0x8000000c): ask servers in a chain, verify malfeasance reports, make a server\'s keys'
complete -c authtime -n "__fish_authtime_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and not __fish_seen_subcommand_from list tag verify help" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and not __fish_seen_subcommand_from list tag verify help" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and not __fish_seen_subcommand_from list tag verify help" -f -a "list" -d 'List every MAC algorithm with its key, nonce and tag sizes in bytes'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and not __fish_seen_subcommand_from list tag verify help" -f -a "tag" -d 'Compute the tag of a message and print it in lowercase hex'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and not __fish_seen_subcommand_from list tag verify help" -f -a "verify" -d 'Check a tag over a message: exit 0 when it matches, 1 when it does not'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and not __fish_seen_subcommand_from list tag verify help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from list" -l json -d 'Print a JSON array of objects {name, kind, key_min, key_max, nonce_len, tag_len, summary} instead of a table'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from tag" -l alg -d 'Algorithm name from `authtime mac list`, or `partial:<inner>:<rate>`' -r
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from tag" -l key -d 'Key as hex digits (two per byte, no 0x prefix, no spaces)' -r
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from tag" -l nonce -d 'Nonce as hex digits, for algorithms that take one' -r
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from tag" -l in -d 'Read the message from FILE instead of standard input ("-" is standard input)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from tag" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from tag" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from verify" -l alg -d 'Algorithm name from `authtime mac list`, or `partial:<inner>:<rate>`' -r
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from verify" -l key -d 'Key as hex digits (two per byte, no 0x prefix, no spaces)' -r
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from verify" -l nonce -d 'Nonce as hex digits, for algorithms that take one' -r
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from verify" -l in -d 'Read the message from FILE instead of standard input ("-" is standard input)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from verify" -l tag -d 'The tag to check, as hex digits' -r
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from verify" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from verify" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from help" -f -a "list" -d 'List every MAC algorithm with its key, nonce and tag sizes in bytes'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from help" -f -a "tag" -d 'Compute the tag of a message and print it in lowercase hex'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from help" -f -a "verify" -d 'Check a tag over a message: exit 0 when it matches, 1 when it does not'
complete -c authtime -n "__fish_authtime_using_subcommand mac; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand hash" -l alg -d 'Hash function' -r -f -a "md5\t'MD5 (RFC 1321)'
md5-kway4\t'RFC 1810\'s interleaved MD5 with 4 chains (not MD5: different digests)'
md5-kway16\t'RFC 1810\'s interleaved MD5 with 16 chains (not MD5: different digests)'"
complete -c authtime -n "__fish_authtime_using_subcommand hash" -l in -d 'Read the message from FILE instead of standard input ("-" is standard input)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand hash" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c authtime -n "__fish_authtime_using_subcommand hash" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand serve" -l config -d 'TOML configuration file (see examples/authtime.toml)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand serve" -l listen -d 'UDP address to serve on, `IP:PORT` (repeat for several; replaces the file\'s list)' -r
complete -c authtime -n "__fish_authtime_using_subcommand serve" -l keys -d 'Key file, ntpd or chrony format (replaces the file\'s)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand serve" -l metrics -d 'Serve Prometheus metrics on this address, `IP:PORT` (replaces the file\'s)' -r
complete -c authtime -n "__fish_authtime_using_subcommand serve" -l workers -d 'Worker threads per address (0: one per CPU; replaces the file\'s)' -r
complete -c authtime -n "__fish_authtime_using_subcommand serve" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand serve" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand config; and not __fish_seen_subcommand_from check help" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand config; and not __fish_seen_subcommand_from check help" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand config; and not __fish_seen_subcommand_from check help" -f -a "check" -d 'Check a configuration file (and the key files and certificate it names): prints "ok", or each problem as FILE:LINE:COLUMN: message'
complete -c authtime -n "__fish_authtime_using_subcommand config; and not __fish_seen_subcommand_from check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand config; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand config; and __fish_seen_subcommand_from check" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand config; and __fish_seen_subcommand_from help" -f -a "check" -d 'Check a configuration file (and the key files and certificate it names): prints "ok", or each problem as FILE:LINE:COLUMN: message'
complete -c authtime -n "__fish_authtime_using_subcommand config; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand query" -l key-file -d 'Key file (ntpd or chrony format) holding --key-id' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand query" -l key-id -d 'Key id to authenticate with' -r
complete -c authtime -n "__fish_authtime_using_subcommand query" -l count -d 'Number of queries (4 by default with --interleaved: the first reply is always basic, and chronyd and authtime answer the second in basic mode too)' -r
complete -c authtime -n "__fish_authtime_using_subcommand query" -l timeout -d 'Seconds to wait for each reply' -r
complete -c authtime -n "__fish_authtime_using_subcommand query" -l interval -d 'Seconds between queries' -r
complete -c authtime -n "__fish_authtime_using_subcommand query" -l ca -d 'With --nts: PEM file of the certificates to trust (a CA, or the server\'s self-signed certificate) instead of the system\'s web PKI roots' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand query" -l cookie-store -d 'With --nts: keep keys and unused cookies in FILE (mode 0600) between runs, so the next run needs no NTS-KE' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand query" -l roughtime-servers -d 'With --nts: Roughtime servers (ecosystem JSON, as for `authtime roughtime query --servers`) asked before NTS-KE; when the local clock is outside the interval a quorum of them agree on, the certificate is checked against that interval instead' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand query" -l roughtime-quorum -d 'How many Roughtime servers must answer, verified and agreeing (default: a majority of those listed, at least 2 when 2 or more are listed)' -r
complete -c authtime -n "__fish_authtime_using_subcommand query" -l assume-local-time -d 'With --nts: take the local clock to read this time (RFC 3339, e.g. 2036-01-01T00:00:00Z, or @SECONDS), for tests and for devices that know their clock is wrong. It changes only the certificate check and the offsets reported; no clock is set' -r
complete -c authtime -n "__fish_authtime_using_subcommand query" -l json -d 'Print a JSON object instead of text'
complete -c authtime -n "__fish_authtime_using_subcommand query" -l interleaved -d 'RFC 9769 interleaved mode: exact offsets from servers that serve it (chronyd, authtime serve). Not with --nts'
complete -c authtime -n "__fish_authtime_using_subcommand query" -l nts -d 'Use NTS (RFC 8915): HOST[:PORT] is the NTS-KE server (port 4460 by default)'
complete -c authtime -n "__fish_authtime_using_subcommand query" -l clock-unknown -d 'Check the certificate against the Roughtime interval even when the local clock is inside it (for a device that knows it has no trustworthy clock)'
complete -c authtime -n "__fish_authtime_using_subcommand query" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c authtime -n "__fish_authtime_using_subcommand query" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand keygen" -l format -d 'Key file format' -r -f -a "chrony\t'chrony\'s chrony.keys'
ntpd\t'ntpd\'s and NTPsec\'s ntp.keys'"
complete -c authtime -n "__fish_authtime_using_subcommand keygen" -l type -d 'Key type' -r
complete -c authtime -n "__fish_authtime_using_subcommand keygen" -l count -d 'Number of keys' -r
complete -c authtime -n "__fish_authtime_using_subcommand keygen" -l first-id -d 'Id of the first key; the others follow' -r
complete -c authtime -n "__fish_authtime_using_subcommand keygen" -l out -d 'Create this file (mode 0600; never overwritten) instead of printing' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand keygen" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c authtime -n "__fish_authtime_using_subcommand keygen" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and not __fish_seen_subcommand_from cert kek help" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and not __fish_seen_subcommand_from cert kek help" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and not __fish_seen_subcommand_from cert kek help" -f -a "cert" -d 'Make a certificate and key for an NTS-KE server (a new CA and a leaf, or self-signed)'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and not __fish_seen_subcommand_from cert kek help" -f -a "kek" -d 'Make a key-encryption key file for sealing the NTS master keys in a shared store'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and not __fish_seen_subcommand_from cert kek help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from cert" -l out-dir -d 'Directory to write the files into' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from cert" -l prefix -d 'File name prefix' -r
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from cert" -l name -d 'DNS name of the server (repeat for several; default localhost when no --ip either)' -r
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from cert" -l ip -d 'IP address of the server (repeat for several)' -r
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from cert" -l days -d 'Days of validity' -r
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from cert" -l self-signed -d 'One self-signed certificate instead of a CA and a leaf'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from cert" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from cert" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from kek" -l out -d 'The file to create' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from kek" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from kek" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from help" -f -a "cert" -d 'Make a certificate and key for an NTS-KE server (a new CA and a leaf, or self-signed)'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from help" -f -a "kek" -d 'Make a key-encryption key file for sealing the NTS master keys in a shared store'
complete -c authtime -n "__fish_authtime_using_subcommand nts; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and not __fish_seen_subcommand_from keygen send recv dtls-send dtls-recv help" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and not __fish_seen_subcommand_from keygen send recv dtls-send dtls-recv help" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and not __fish_seen_subcommand_from keygen send recv dtls-send dtls-recv help" -f -a "keygen" -d 'Make a signature key pair for signing TESLA bootstraps'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and not __fish_seen_subcommand_from keygen send recv dtls-send dtls-recv help" -f -a "send" -d 'Multicast a stream (standard input or a file) in TESLA-authenticated packets'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and not __fish_seen_subcommand_from keygen send recv dtls-send dtls-recv help" -f -a "recv" -d 'Join a TESLA multicast group and write only the authenticated stream'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and not __fish_seen_subcommand_from keygen send recv dtls-send dtls-recv help" -f -a "dtls-send" -d 'Stream standard input or a file to DTLS receivers in TESLA-authenticated records'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and not __fish_seen_subcommand_from keygen send recv dtls-send dtls-recv help" -f -a "dtls-recv" -d 'Connect to a `tesla dtls-send` sender over DTLS and write only the authenticated stream'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and not __fish_seen_subcommand_from keygen send recv dtls-send dtls-recv help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from keygen" -l scheme -d 'Signature scheme: ed25519, p256, ml-dsa-44, ml-dsa-65, slh-dsa-128s or lms' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from keygen" -l out -d 'Secret key file to create (mode 0600, never overwritten)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from keygen" -l pub -d 'Public key file to create (default FILE.pub)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from keygen" -l json -d 'Print a JSON object (scheme, files, sizes, milliseconds) on standard output'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from keygen" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from keygen" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l to -d 'Multicast group and port, `GROUP:PORT` (IPv4)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l iface -d 'Address of the interface to send from (default: the kernel\'s choice)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l ttl -d 'Multicast TTL (1: the local network only)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l key -d 'Secret key file from `authtime tesla keygen`' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l sync-listen -d 'UDP address answering sync requests, `IP:PORT`' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l interval-ms -d 'Interval length T_int in milliseconds' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l delay-intervals -d 'Key disclosure delay d, in intervals' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l chain-length -d 'Keys per chain; the next chain\'s commitment is sent before one ends' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l mac -d 'MAC algorithm (from `authtime mac list`; no nonce-based MACs)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l mac-len -d 'MAC tag length in bytes (at least 10)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l in -d 'Read the stream from FILE instead of standard input' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l rate -d 'Data packets per second at most' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l payload-size -d 'Stream bytes per packet at most' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l wait-sync -d 'Hold the data until this many sync requests were answered (key disclosures still flow)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l wait-timeout -d 'Start sending anyway after this many seconds of --wait-sync' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l max-syncs-per-s -d 'Sync responses per second at most (each costs a signature; LMS keys have 1024)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l drop-every -d 'Fault injection (tests): do not send every Nth data packet' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -l reorder -d 'Fault injection (tests): send the data packets of each pair in swapped order'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from send" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l group -d 'Multicast group and port, `GROUP:PORT` (IPv4)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l iface -d 'Address of the interface to join the group on (default: the kernel\'s choice)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l sender -d 'The sender\'s sync address, `IP:PORT`' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l pubkey -d 'The sender\'s public key file' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l out -d 'Write the stream to FILE (created or truncated) instead of standard output' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l stats -d 'Write the final statistics as JSON to FILE' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l max-buffer -d 'Bytes of packets held while their keys are pending' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l timeout -d 'Seconds to wait for the bootstrap (sync requests are repeated after 1, 2, 4... s)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l idle-exit -d 'Stop (exit 3) after this many seconds without a packet before the end of the stream' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l drift-ppm -d 'Relative drift allowed between the two clocks, in parts per million' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l status-every -d 'Seconds between status lines on standard error (0: none)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -l json -d 'Print the final statistics as JSON on the last line of standard error'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from recv" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l listen -d 'UDP address to accept DTLS receivers on, `IP:PORT`' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l key -d 'Secret key file from `authtime tesla keygen` (signs the sync responses)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l psk-identity -d 'PSK mode: the identity receivers announce' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l psk-hex -d 'PSK mode: the pre-shared key in hex' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l cert-out -d 'Certificate mode: write the fresh self-signed certificate (PEM) to FILE' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l clients -d 'Receivers to accept before streaming' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l wait-timeout -d 'Seconds to wait for the receivers' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l in -d 'Read the stream from FILE instead of standard input' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l interval-ms -d 'Interval length T_int in milliseconds' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l delay-intervals -d 'Key disclosure delay d, in intervals' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l chain-length -d 'Keys per chain' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l mac -d 'MAC algorithm (from `authtime mac list`; no nonce-based MACs)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l mac-len -d 'MAC tag length in bytes (at least 10)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l rate -d 'Data packets per second at most' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -l payload-size -d 'Stream bytes per packet at most (a packet must fit one DTLS record)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-send" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l server -d 'The sender\'s DTLS address, `IP:PORT`' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l pubkey -d 'The sender\'s public key file' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l psk-identity -d 'PSK mode: the identity to announce' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l psk-hex -d 'PSK mode: the pre-shared key in hex' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l cert -d 'Certificate mode: the sender\'s certificate (PEM), trusted exactly' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l out -d 'Write the stream to FILE (created or truncated) instead of standard output' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l timeout -d 'Seconds to wait for the bootstrap, and for each record afterwards' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l drift-ppm -d 'Relative drift allowed between the two clocks, in parts per million' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l attempt-ms -d 'Milliseconds to wait for each handshake message before starting a new handshake (keep it below the sender\'s d * T_int: the whole handshake is the clock uncertainty)' -r
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -l json -d 'Print the final statistics as JSON on the last line of standard error'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from dtls-recv" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from help" -f -a "keygen" -d 'Make a signature key pair for signing TESLA bootstraps'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from help" -f -a "send" -d 'Multicast a stream (standard input or a file) in TESLA-authenticated packets'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from help" -f -a "recv" -d 'Join a TESLA multicast group and write only the authenticated stream'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from help" -f -a "dtls-send" -d 'Stream standard input or a file to DTLS receivers in TESLA-authenticated records'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from help" -f -a "dtls-recv" -d 'Connect to a `tesla dtls-send` sender over DTLS and write only the authenticated stream'
complete -c authtime -n "__fish_authtime_using_subcommand tesla; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and not __fish_seen_subcommand_from serve listen help" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and not __fish_seen_subcommand_from serve listen help" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and not __fish_seen_subcommand_from serve listen help" -f -a "serve" -d 'Multicast TESLA-authenticated NTP broadcast packets and answer direct-sync requests'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and not __fish_seen_subcommand_from serve listen help" -f -a "listen" -d 'Bootstrap from a broadcast server, join its group and report authenticated time samples'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and not __fish_seen_subcommand_from serve listen help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l group -d 'Multicast group and port, `GROUP:PORT` (IPv4)' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l iface -d 'Address of the interface to send from (default: the kernel\'s choice)' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l ttl -d 'Multicast TTL (1: the local network only)' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l sync-listen -d 'UDP address answering sync requests, `IP:PORT`' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l key -d 'Secret key file from `authtime tesla keygen`' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l interval-ms -d 'Interval length T_int in milliseconds (one broadcast packet per interval)' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l delay-intervals -d 'Key disclosure delay d, in intervals' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l chain-length -d 'Keys per chain' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l duration -d 'Stop after this many seconds (default: run until killed)' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -l config -d 'Configuration file of `authtime serve` whose [clock] section says where the state of this clock comes from (default: chronyd if it answers, else the kernel). Packets carry that state: leap 3 and stratum 0 while the clock is unsynchronized, which listeners refuse' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from serve" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l group -d 'Multicast group and port, `GROUP:PORT` (IPv4)' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l iface -d 'Address of the interface to join the group on (default: the kernel\'s choice)' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l sync -d 'The server\'s sync address, `IP:PORT`' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l pubkey -d 'The server\'s public key file' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l count -d 'Exit 0 after this many accepted samples' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l max-step-ms -d 'Largest change of the estimate one sample may cause, in milliseconds' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l drift-ppm -d 'Relative drift allowed between the two clocks, in parts per million' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l timeout -d 'Seconds to wait for the bootstrap and the samples together' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l nts-check -d 'Cross-check every sample with a unicast NTS measurement from this NTS-KE server (`HOST[:PORT]`, port 4460 by default): the broadcast estimate must agree with it within the broadcast uncertainty plus the NTS round trip plus --nts-tolerance-ms, else the sample is refused (exit 1)' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l nts-ca -d 'With --nts-check: PEM file of the certificates to trust for NTS-KE' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l nts-tolerance-ms -d 'With --nts-check: extra disagreement allowed, in milliseconds (the two servers\' own synchronisation error)' -r
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -l json -d 'Print one JSON object per sample instead of a text line'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from listen" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from help" -f -a "serve" -d 'Multicast TESLA-authenticated NTP broadcast packets and answer direct-sync requests'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from help" -f -a "listen" -d 'Bootstrap from a broadcast server, join its group and report authenticated time samples'
complete -c authtime -n "__fish_authtime_using_subcommand broadcast; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand status" -l config -d 'The configuration file of `authtime serve` (default: its embedded defaults, as `./run.sh` starts it)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand status" -l server -d 'Also ask the running server at HOST[:PORT] (plain NTP, port 123 by default) what it announces, and show it beside the reading; with a [metrics] endpoint in the configuration, also what its metrics say about the time it served (modes, timestamp sources, transmit error) and about its clients (counts, rates, top talkers)' -r
complete -c authtime -n "__fish_authtime_using_subcommand status" -l json -d 'Print a JSON object instead of text'
complete -c authtime -n "__fish_authtime_using_subcommand status" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand status" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and not __fish_seen_subcommand_from query verify-report keygen delegate help" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and not __fish_seen_subcommand_from query verify-report keygen delegate help" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and not __fish_seen_subcommand_from query verify-report keygen delegate help" -f -a "query" -d 'Ask Roughtime servers for the time in turn, with chained nonces, and check that their signed answers agree'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and not __fish_seen_subcommand_from query verify-report keygen delegate help" -f -a "verify-report" -d 'Check a malfeasance report (draft-ietf-ntp-roughtime-19 §8.2): its chain verifies and two of its answers are out of causal order'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and not __fish_seen_subcommand_from query verify-report keygen delegate help" -f -a "keygen" -d 'Make a Roughtime server\'s long-term key (an Ed25519 seed file) and print its public key'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and not __fish_seen_subcommand_from query verify-report keygen delegate help" -f -a "delegate" -d 'Delegate to a fresh online key with a long-term key kept offline: the file the daemon takes as `[roughtime] delegation`'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and not __fish_seen_subcommand_from query verify-report keygen delegate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from query" -l servers -d 'A server list in the ecosystem JSON format (Cloudflare\'s ecosystem.json)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from query" -l server -d 'A server to ask, in order; repeat for several. Each needs a --public-key' -r
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from query" -l public-key -d 'The long-term Ed25519 public key of the --server in the same position' -r
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from query" -l version -d 'The version to offer: once for every --server, or once per --server. Without it both are offered and the server picks' -r -f -a "1\t'RFC 10049\'s version 1'
draft\t'The drafts\' 0x8000000c (drafts 12 to 19, Cloudflare, roughenough 1.x)'"
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from query" -l timeout-ms -d 'How long to wait for each answer, in milliseconds' -r
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from query" -l retries -d 'How many times to resend an unanswered request' -r
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from query" -l malfeasance-report -d 'Where to write the malfeasance report (JSON) when answers are out of causal order' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from query" -l json -d 'Print one JSON object instead of text'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from query" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from verify-report" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from verify-report" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from keygen" -l out -d 'Where to write the long-term seed (hex, mode 0600); an existing file is never overwritten' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from keygen" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from keygen" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from delegate" -l long-term-key -d 'The long-term seed file (from `authtime roughtime keygen`)' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from delegate" -l valid-for -d 'How long the online key is valid from now: seconds, or a number with s, m, h, d or w (30d). MINT is set 5 minutes before now for clients whose clocks lag' -r
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from delegate" -l out -d 'Where to write the delegation (mode 0600); an existing file is never overwritten' -r -F
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from delegate" -s h -l help -d 'Print help'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from delegate" -s V -l version -d 'Print version'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from help" -f -a "query" -d 'Ask Roughtime servers for the time in turn, with chained nonces, and check that their signed answers agree'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from help" -f -a "verify-report" -d 'Check a malfeasance report (draft-ietf-ntp-roughtime-19 §8.2): its chain verifies and two of its answers are out of causal order'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from help" -f -a "keygen" -d 'Make a Roughtime server\'s long-term key (an Ed25519 seed file) and print its public key'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from help" -f -a "delegate" -d 'Delegate to a fresh online key with a long-term key kept offline: the file the daemon takes as `[roughtime] delegation`'
complete -c authtime -n "__fish_authtime_using_subcommand roughtime; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "mac" -d 'Compute, verify and list message authentication codes'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "hash" -d 'Hash a message with MD5 or with RFC 1810\'s K-way interleaved MD5'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "serve" -d 'Serve NTP (plain, symmetric-key authenticated, and NTS with NTS-KE) until SIGTERM'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "config" -d 'Work with `authtime serve` configuration files'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "query" -d 'Ask an NTP server for the time, optionally authenticated with a symmetric key or NTS'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "keygen" -d 'Write a new key file that chrony, ntpd and NTPsec read'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "nts" -d 'Network Time Security (RFC 8915) tools'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "tesla" -d 'TESLA (RFC 4082) broadcast authentication: key pairs, multicast sender and receiver'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "broadcast" -d 'NTP broadcast (mode 5) authenticated with TESLA: multicast server and listener'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "status" -d 'What `authtime serve` announces about its clock now (stratum, leap, root dispersion, or unsynchronized), and why'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "roughtime" -d 'Roughtime (RFC 10049 and the drafts\' 0x8000000c): ask servers in a chain, verify malfeasance reports, make a server\'s keys'
complete -c authtime -n "__fish_authtime_using_subcommand help; and not __fish_seen_subcommand_from mac hash serve config query keygen nts tesla broadcast status roughtime help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from mac" -f -a "list" -d 'List every MAC algorithm with its key, nonce and tag sizes in bytes'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from mac" -f -a "tag" -d 'Compute the tag of a message and print it in lowercase hex'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from mac" -f -a "verify" -d 'Check a tag over a message: exit 0 when it matches, 1 when it does not'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from config" -f -a "check" -d 'Check a configuration file (and the key files and certificate it names): prints "ok", or each problem as FILE:LINE:COLUMN: message'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from nts" -f -a "cert" -d 'Make a certificate and key for an NTS-KE server (a new CA and a leaf, or self-signed)'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from nts" -f -a "kek" -d 'Make a key-encryption key file for sealing the NTS master keys in a shared store'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from tesla" -f -a "keygen" -d 'Make a signature key pair for signing TESLA bootstraps'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from tesla" -f -a "send" -d 'Multicast a stream (standard input or a file) in TESLA-authenticated packets'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from tesla" -f -a "recv" -d 'Join a TESLA multicast group and write only the authenticated stream'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from tesla" -f -a "dtls-send" -d 'Stream standard input or a file to DTLS receivers in TESLA-authenticated records'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from tesla" -f -a "dtls-recv" -d 'Connect to a `tesla dtls-send` sender over DTLS and write only the authenticated stream'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from broadcast" -f -a "serve" -d 'Multicast TESLA-authenticated NTP broadcast packets and answer direct-sync requests'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from broadcast" -f -a "listen" -d 'Bootstrap from a broadcast server, join its group and report authenticated time samples'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from roughtime" -f -a "query" -d 'Ask Roughtime servers for the time in turn, with chained nonces, and check that their signed answers agree'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from roughtime" -f -a "verify-report" -d 'Check a malfeasance report (draft-ietf-ntp-roughtime-19 §8.2): its chain verifies and two of its answers are out of causal order'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from roughtime" -f -a "keygen" -d 'Make a Roughtime server\'s long-term key (an Ed25519 seed file) and print its public key'
complete -c authtime -n "__fish_authtime_using_subcommand help; and __fish_seen_subcommand_from roughtime" -f -a "delegate" -d 'Delegate to a fresh online key with a long-term key kept offline: the file the daemon takes as `[roughtime] delegation`'
