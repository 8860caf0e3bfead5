# access_ip.rb (access phase): allow only clients from some networks.
# r.remote_addr is the client's IP address without the port.

# Allowed addresses: whole addresses, or network prefixes ending in "."
# (IPv4) or ":" (IPv6).
ALLOWED = ["127.0.0.1", "::1", "10.", "192.168.", "2001:db8:"]

ip = r.remote_addr
allowed = ALLOWED.any? do |prefix|
  ip == prefix || (prefix.end_with?(".", ":") && ip.start_with?(prefix))
end
return if allowed # continue with the next phase

Hostd.log("warn", "access denied for #{ip}")
return 403
