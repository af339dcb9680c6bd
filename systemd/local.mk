# Rules for systemd/.
