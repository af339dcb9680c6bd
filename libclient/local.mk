# Rules for libclient/.
