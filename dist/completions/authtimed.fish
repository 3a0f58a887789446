complete -c authtimed -l config -d 'TOML configuration file (authtimed.toml(5); the package installs /etc/authtime/authtimed.toml)' -r -F
complete -c authtimed -l listen -d 'UDP address to serve on, `IP:PORT` (repeat for several, or separate them with commas; replaces the file\'s list)' -r
complete -c authtimed -l keys -d 'Key file, ntpd or chrony format (replaces the file\'s)' -r -F
complete -c authtimed -l metrics -d 'Serve Prometheus metrics on this address, `IP:PORT` (replaces the file\'s)' -r
complete -c authtimed -l workers -d 'Worker threads per address (0: one per CPU; replaces the file\'s)' -r
complete -c authtimed -l log-format -d 'Log format: auto (journald\'s under systemd, else text), text, journald or json (replaces the file\'s `[log] format`)' -r
complete -c authtimed -l user -d 'When started as root, switch to this user once the sockets are bound (default `authtime`; replaces the file\'s `[daemon] user`)' -r
complete -c authtimed -l group -d 'The group to switch to (default: the user\'s primary group)' -r
complete -c authtimed -l allow-root -d 'When started as root, stay root instead of switching user (not recommended)'
complete -c authtimed -s h -l help -d 'Print help'
complete -c authtimed -s V -l version -d 'Print version'
